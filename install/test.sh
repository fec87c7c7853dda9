#!/usr/bin/env bash
# Runs every nbcuda test: set-up (idempotent), the Rust tests of the workspace, then the Python
# tests that drive the real Jupyter kernel. Ends with one line counting everything:
#   N passed, N failed, N skipped
# (skipped: ignored Rust tests, Rust tests that printed `SKIPPED:` and returned early, skipped
# Python tests) and exits non-zero when anything failed.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
LOGS="$(mktemp -d "${TMPDIR:-/tmp}/nbcuda-test.XXXXXX")"
trap 'rm -rf "$LOGS"' EXIT

passed=0 failed=0 skipped=0
summary() {
    echo
    echo "${passed} passed, ${failed} failed, ${skipped} skipped"
}

echo "==> bash install/setup.sh"
if ! bash install/setup.sh; then
    echo "test.sh: set-up failed, no test ran" >&2
    failed=1
    summary
    exit 1
fi

# 1. Rust: every crate of the workspace ----------------------------------------------------------
# cargo_tests LOG ARGS...: run `cargo test ARGS`, add its counts to the totals.
cargo_tests() {
    local log="$1"
    shift
    cargo test "$@" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]} c_pass c_fail c_skip
    read -r c_pass c_fail c_skip < <(
        sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored.*/\1 \2 \3/p' \
            "$log" | awk '{p+=$1; f+=$2; s+=$3} END {print p+0, f+0, s+0}'
    )
    if [ "$rc" -ne 0 ] && [ "$c_fail" -eq 0 ]; then
        echo "test.sh: cargo test exited $rc without a failed test (build error?): counted as 1 failure" >&2
        c_fail=1
    fi
    # A test that cannot run here (no NVRTC, …) returns early, which libtest counts as passed;
    # it says so first with one `SKIPPED: <test>: <why>` line (crates/testkit): count it skipped.
    local c_early
    # (counted anywhere on a line: libtest may have printed `test NAME ... ` before it)
    c_early=$(grep -o 'SKIPPED: ' "$log" | wc -l)
    c_early=$((c_early > c_pass ? c_pass : c_early))
    c_pass=$((c_pass - c_early)) c_skip=$((c_skip + c_early))
    passed=$((passed + c_pass)) failed=$((failed + c_fail)) skipped=$((skipped + c_skip))
}
echo "==> cargo test --release --workspace --no-fail-fast -- --skip tests_published"
# --no-fail-fast: one failing test binary must not hide the results of the others.
cargo_tests "$LOGS/cargo.log" --release --workspace --no-fail-fast -- --skip tests_published
# One pass: the simulator's engine settings (JIT, block tier, replays, gangs, AVX2/AVX-512
# builds) are launch data, and crates/ptxsim/tests/differential.rs and engines.rs run every
# fixture kernel under each of them in one process.
# The model against published measurements (src/magics/tests_published.rs, about 5 minutes of
# both cores) runs alone afterwards: beside it, tests with deadlines (rust-analyzer's
# completions) starve.
echo "==> cargo test --release --lib tests_published"
cargo_tests "$LOGS/published.log" --release --lib tests_published

# 2. Python: the Jupyter kernel through real Jupyter clients --------------------------------------
echo "==> .venv/bin/python -m pytest tests/python -v"
nvrtc_dirs="$(ls -d "$VENV"/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib 2>/dev/null | paste -sd: -)"
LD_LIBRARY_PATH="${nvrtc_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
JUPYTER_PATH="$VENV/share/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}" \
JUPYTER_PLATFORM_DIRS=1 \
    "$VENV/bin/python" -m pytest tests/python -v 2>&1 | tee "$LOGS/pytest.log"
pytest_rc=${PIPESTATUS[0]}
line="$(grep -E '^=+ .*(passed|failed|skipped|error|no tests ran).* in [0-9.]+s' "$LOGS/pytest.log" | tail -1)"
count() { echo "$line" | grep -oE "[0-9]+ $1" | head -1 | grep -oE '^[0-9]+' || echo 0; }
p_pass=$(count passed)
p_fail=$(( $(count failed) + $(count errors?) ))
p_skip=$(count skipped)
if [ "$pytest_rc" -ne 0 ] && [ "$p_fail" -eq 0 ]; then
    echo "test.sh: pytest exited $pytest_rc without a failed test (no tests collected?): counted as 1 failure" >&2
    p_fail=1
fi
passed=$((passed + p_pass)) failed=$((failed + p_fail)) skipped=$((skipped + p_skip))

summary
[ "$failed" -eq 0 ]
