#!/usr/bin/env bash
# ptxsim benchmark (issue 3, "Speed"): the tutorial CUDA kernels on ptxsim, beside a native
# single-threaded Rust version of the same computation and, when it can be installed, Numba's
# CUDA simulator (NUMBA_ENABLE_CUDASIM=1) on the same inputs at a smaller size. Rates are
# threads/s, so the ratios compare per-thread rates. Prints a table; the last line is
#   ptxsim: min_ratio_vs_numba_sim=X max_ratio_vs_native=Y parallel_speedup=Z
# Goals: X >= 5000, Y <= 10, Z >= 1.7 on 2 cores. Extra arguments go to the bench (--quick).
# `--counters [ROUNDS]` instead times counters off / off / interpreted / on, alternating, and
# prints the ratios (issue 34: counters off must cost <= 2%).
#
# Environment: CARGO_TARGET_DIR (default target/), PTXSIM_NUMBA_VENV (default
# /tmp/ptxsim-numba-venv, a throwaway venv that gets `pip install numba`), PTXSIM_SKIP_NUMBA=1.
set -euo pipefail
cd "$(dirname "$0")/.."

target_dir=${CARGO_TARGET_DIR:-target}
venv=${PTXSIM_NUMBA_VENV:-/tmp/ptxsim-numba-venv}
numba_args=()
if [ "${PTXSIM_SKIP_NUMBA:-0}" != 1 ]; then
    if ! "$venv/bin/python" -c "import numba" >/dev/null 2>&1; then
        echo "installing numba into $venv ..." >&2
        { python3 -m venv "$venv" && "$venv/bin/pip" install -q numba; } >&2 2>&1 || true
    fi
    if "$venv/bin/python" -c "import numba" >/dev/null 2>&1; then
        numba_args=(--numba "$venv/bin/python")
    else
        echo "numba: could not be installed; skipping Numba's CUDA simulator" >&2
    fi
else
    echo "numba: skipped (PTXSIM_SKIP_NUMBA=1)" >&2
fi

cargo build --release -p ptxsim --example bench --target-dir "$target_dir" >&2
exec "$target_dir/release/examples/bench" "${numba_args[@]}" "$@"
