#!/usr/bin/env bash
# The GPU check of nbcuda (issue 5), in two steps:
#
#   bash scripts/gpu-check.sh pack    # HERE (no GPU needed): build and bundle everything
#   bash scripts/gpu-check.sh run     # ON THE GPU MACHINE: nothing is built there, < 5 minutes
#                                     # before the model check (issue 35), which adds 1-3 minutes
#   bash scripts/gpu-check.sh model   # ON THE GPU MACHINE: the set-up, then the model check alone
#
# `pack` builds target/release/nbcuda and the example target/release/examples/gpu_bench, strips
# them, and packs them with NVRTC 12.9 (from .venv: the GPU image's toolkit is CUDA 13, whose
# libnvrtc.so.13 cudarc's CUDA 12 bindings cannot use), its CUDA headers, and Python wheels for
# the Jupyter client (the GPU image has Python 3.12 and pytest but no jupyter_client, and
# nothing can be downloaded there) into target/gpu-check/bundle.tar.xz (about 45 MB; the
# device tool carries at most 64 MiB). Then, from the session that has a GPU:
#
#   run(command="bash scripts/gpu-check.sh run 2>&1 | tee $OUT/gpu-check.log",
#       carry=["target/gpu-check"], timeout_s=600)
#
# `run` unpacks the bundle in /tmp, checks that the binary starts (`nbcuda --version`; the GPU
# machine's glibc may be older than ours), installs the kernelspec into a throw-away venv, runs
# tests/python/test_gpu.py (every magic on the GPU against ptxsim, a planted illegal address
# recovered by %reset), then gpu_bench: a table of launch overhead (%launch, DeviceState, raw
# cudarc), vector-add bandwidth against a device-to-device copy, host↔device copies, compile
# cache miss/hit, and the tutorial CUDA kernels of crates/ptxsim/kernels on the GPU vs ptxsim;
# then scripts/model_check.py (issue 35): every tutorial launch and every launch the notebooks
# compare, the model's estimate for this GPU (%profile, the device's %gpu model) beside its
# CUDA-event time (%time batches, >= 50 ms of GPU work a row, median of 10), ending in
# `model: median_error=E% worst=W% order_agreement=A of B`; then, where ncu is installed,
# scripts/ncu_compare.py: ncu's counters of the notebooks' main CUDA kernels beside %profile's
# (ptxsim), ending in `counters: exact=K of N`, and scripts/ncu_profile.py: `%profile --ncu` of
# one tutorial launch (ncu started by the Jupyter kernel itself), ending in
# `ncu-profile: N metrics from ncu` or why ncu measured nothing.
#
# The model check alone (a minute or two on the GPU, after the same unpacking and set-up):
#
#   run(command="bash scripts/gpu-check.sh model 2>&1 | tee $OUT/model-check.log",
#       carry=["target/gpu-check"], timeout_s=420)
#
# It writes $OUT/model-check/model-check.{md,json,csv}. Commit the .md and the .json as
# benches/results/<gpu>/model-check.md and model-check.json (e.g. benches/results/h100/,
# replacing the last ones): tests/python/test_model_check.py then re-estimates every
# row with the current model on ptxsim and fails when the median error exceeds 30% or an order
# the GPU measured is lost (with no such file it is skipped). Put the last line's figures in
# the note that goes with the commit.
#
# glibc: a plain build here needs the glibc this machine has (GLIBC_2.34 as of writing; `pack`
# prints the newest symbol version the binaries need). When the GPU machine's glibc is older,
# build for glibc 2.28 with zig as the linker and pack that instead:
#   .venv/bin/pip install ziglang cargo-zigbuild
#   NBCUDA_ZIGBUILD=1 PATH="$PWD/.venv/bin:$PATH" bash scripts/gpu-check.sh pack
# (cargo zigbuild --release --target x86_64-unknown-linux-gnu.2.28; outputs in
# target/x86_64-unknown-linux-gnu/release/). NBCUDA_PACK_NO_BUILD=1 packs the binaries already
# built.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUNDLE_DIR="$ROOT/target/gpu-check"
BUNDLE="$BUNDLE_DIR/bundle.tar.xz"
WHEELS=(jupyter_client jupyter_core pyzmq tornado traitlets platformdirs python-dateutil six pytest pluggy iniconfig packaging)

die() { echo "gpu-check: $*" >&2; exit 1; }

pack() {
    local rel="$ROOT/target/release"
    if [ "${NBCUDA_PACK_NO_BUILD:-0}" != 1 ]; then
        if [ "${NBCUDA_ZIGBUILD:-0}" = 1 ]; then
            cargo zigbuild --release --target x86_64-unknown-linux-gnu.2.28 --bin nbcuda --example gpu_bench
            rel="$ROOT/target/x86_64-unknown-linux-gnu/release"
        else
            cargo build --release --bin nbcuda --example gpu_bench
        fi
    elif [ -x "$ROOT/target/x86_64-unknown-linux-gnu/release/nbcuda" ] && [ "${NBCUDA_ZIGBUILD:-0}" = 1 ]; then
        rel="$ROOT/target/x86_64-unknown-linux-gnu/release"
    fi
    [ -x "$rel/nbcuda" ] || die "no $rel/nbcuda"
    [ -x "$rel/examples/gpu_bench" ] || die "no $rel/examples/gpu_bench"
    local nvrtc_dir
    nvrtc_dir="$(ls -d "$ROOT"/.venv/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib 2>/dev/null | head -1)"
    [ -n "$nvrtc_dir" ] || die "no NVRTC wheel in .venv (run bash install/setup.sh)"
    local nvidia="${nvrtc_dir%/cuda_nvrtc/lib}"
    local stage
    stage="$(mktemp -d "${TMPDIR:-/tmp}/nbcuda-pack.XXXXXX")"
    trap 'rm -rf "$stage"' RETURN
    mkdir -p "$stage/bin" "$stage/nvidia/cuda_nvrtc/lib" "$stage/nvidia/cuda_runtime" "$stage/nvidia/cuda_nvcc" "$stage/wheels"
    cp "$rel/nbcuda" "$rel/examples/gpu_bench" "$stage/bin/"
    strip "$stage/bin/nbcuda" "$stage/bin/gpu_bench" 2>/dev/null || true
    cp "$nvrtc_dir/libnvrtc.so.12" "$nvrtc_dir"/libnvrtc-builtins.so.12.* "$stage/nvidia/cuda_nvrtc/lib/"
    cp -r "$nvidia/cuda_runtime/include" "$stage/nvidia/cuda_runtime/"
    # mma.h includes crt/mma.h, which only the nvcc wheel ships (its include folder: 1 MB).
    cp -r "$nvidia/cuda_nvcc/include" "$stage/nvidia/cuda_nvcc/"
    "$ROOT/.venv/bin/python" -m pip download --quiet --only-binary=:all: --python-version 3.12 \
        --implementation cp --abi cp312 --abi abi3 --abi none \
        --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --platform any \
        -d "$stage/wheels" "${WHEELS[@]}"
    echo "glibc symbol versions the binaries need (newest):"
    for b in "$stage/bin/nbcuda" "$stage/bin/gpu_bench"; do
        printf '  %s: %s\n' "$(basename "$b")" \
            "$(objdump -T "$b" | grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1)"
    done
    mkdir -p "$BUNDLE_DIR"
    tar -C "$stage" -cf - . | xz -T0 -6 > "$BUNDLE.tmp"
    mv "$BUNDLE.tmp" "$BUNDLE"
    local size
    size=$(stat -c %s "$BUNDLE")
    echo "packed $BUNDLE ($((size / 1048576)) MiB; the device tool carries 64 MiB in all)"
    [ "$size" -lt $((60 * 1048576)) ] || die "the bundle is too large to carry"
    echo 'on the GPU machine: run(command="bash scripts/gpu-check.sh run 2>&1 | tee $OUT/gpu-check.log", carry=["target/gpu-check"], timeout_s=600); the model check alone: bash scripts/gpu-check.sh model'
}

# Unpacks the bundle into $B, checks the binary and the GPU, and installs the kernelspec into
# a throw-away venv ($B/venv): what every step on the GPU machine needs.
prepare() {
    [ -f "$BUNDLE" ] || die "no $BUNDLE: run \`bash scripts/gpu-check.sh pack\` on the build machine and carry target/gpu-check"
    # B (the unpacked bundle) and out (the output folder) are the caller's locals.
    mkdir -p "$out"
    rm -rf "$B"
    mkdir -p "$B"
    echo "==> unpack"
    xz -dc "$BUNDLE" | tar -C "$B" -xf - || python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$BUNDLE" "$B"
    echo "==> the binary starts"
    if ! "$B/bin/nbcuda" --version; then
        echo "nbcuda does not start here; this machine's glibc:" >&2
        ldd --version 2>&1 | head -1 >&2
        die "rebuild with NBCUDA_ZIGBUILD=1 (glibc 2.28 target): see the top of this script"
    fi
    echo "==> the GPU"
    nvidia-smi -L || true
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv || true
    export NBCUDA_NVRTC="$B/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
    export LD_LIBRARY_PATH="$B/nvidia/cuda_nvrtc/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export NBCUDA_CACHE_DIR="$B/cache"
    "$B/bin/nbcuda" doctor 2>&1 | tail -20 || true
    echo "==> Python environment (wheels carried; nothing downloaded)"
    python3 -m venv --system-site-packages "$B/venv"
    "$B/venv/bin/python" -m pip install --quiet --no-index --find-links "$B/wheels" jupyter_client pytest
    VIRTUAL_ENV="$B/venv" PATH="$B/venv/bin:$PATH" "$B/bin/nbcuda" install --sys-prefix
}

# The model's estimates beside CUDA-event times (issue 35): $out/model-check/model-check.{md,json,csv}.
model_check() {
    echo "==> the model's estimates beside CUDA-event times (scripts/model_check.py; last line model: median_error=E% worst=W% order_agreement=A of B)"
    PATH="$B/venv/bin:$PATH" PYTHONUNBUFFERED=1 NBCUDA_VERSION="$("$B/bin/nbcuda" --version 2>/dev/null | head -1)" \
        timeout 300 "$B/venv/bin/python" -u "$ROOT/scripts/model_check.py" --out "$out/model-check" 2>&1 \
        | tee "$out/model-check.log" || true
}

model() {
    local B=/tmp/nbcuda-gpu-check
    local out="${OUT:-/tmp/nbcuda-gpu-check-out}"
    local t0=$SECONDS
    prepare
    model_check
    echo "gpu-check model: $((SECONDS - t0)) s; commit $out/model-check/model-check.md and .json as benches/results/<gpu>/"
}

run() {
    local B=/tmp/nbcuda-gpu-check
    local out="${OUT:-/tmp/nbcuda-gpu-check-out}"
    local t0=$SECONDS
    prepare
    echo "==> GPU tests (tests/python/test_gpu.py)"
    local rc_tests=0
    (
        cd "$ROOT/tests/python"
        PATH="$B/venv/bin:$PATH" PYTHONUNBUFFERED=1 timeout 240 \
            "$B/venv/bin/python" -m pytest -p no:cacheprovider -q -rs test_gpu.py test_graphs.py test_half.py 2>&1 | tee "$out/pytest.log"
        exit "${PIPESTATUS[0]}"
    ) || rc_tests=$?
    echo "==> recovery from a sticky fault: which driver strategies work (one process each)"
    for n in 1 2 3 4 5; do
        timeout 30 "$B/bin/gpu_bench" --reset-probe "$n" 2>&1 | tee -a "$out/reset-probe.log" || true
    done
    echo "==> figures (gpu_bench)"
    local rc_bench=0
    timeout 120 "$B/bin/gpu_bench" "$ROOT/crates/ptxsim/kernels" 2>&1 | tee "$out/gpu-bench.md" || rc_bench=${PIPESTATUS[0]}
    echo "==> issue 38: graph of 100 launches vs one by one, wmma vs tiled TFLOP/s, managed vs device bandwidth"
    PATH="$B/venv/bin:$PATH" PYTHONUNBUFFERED=1 timeout 120 \
        "$B/venv/bin/python" -u "$ROOT/benches/gpu_features.py" 2>&1 | tee "$out/gpu-features.md" || true
    echo "==> Jupyter-level latency on the GPU (benches/kernel_latency.py --only cuda)"
    PATH="$B/venv/bin:$PATH" PYTHONUNBUFFERED=1 timeout 90 \
        "$B/venv/bin/python" -u "$ROOT/benches/kernel_latency.py" --only cuda --runs 20 2>&1 \
        | tee "$out/latency.md" || true
    echo "==> the tutorial notebooks' magic cells at GPU sizes (Rust cells need cargo: skipped)"
    PATH="$B/venv/bin:$PATH" PYTHONUNBUFFERED=1 timeout 150 \
        "$B/venv/bin/python" -u "$ROOT/scripts/run_notebook_magics.py" 2>&1 \
        | tee "$out/notebooks.md" || true
    model_check
    echo "==> ptxsim's counters beside ncu's (scripts/ncu_compare.py; last line counters: exact=K of N)"
    if command -v ncu >/dev/null; then
        PATH="$B/venv/bin:$PATH" PYTHONUNBUFFERED=1 timeout 600 \
            "$B/venv/bin/python" -u "$ROOT/scripts/ncu_compare.py" "$out/ncu" 2>&1 \
            | tee "$out/ncu-compare.md" || true
    else
        echo "no ncu on this machine: skipped"
    fi
    echo "==> %profile --ncu on the GPU (scripts/ncu_profile.py; last line ncu-profile: ...)"
    if command -v ncu >/dev/null; then
        PATH="$B/venv/bin:$PATH" PYTHONUNBUFFERED=1 timeout 300 \
            "$B/venv/bin/python" -u "$ROOT/scripts/ncu_profile.py" 2>&1 \
            | tee "$out/ncu-profile.md" || true
    else
        echo "no ncu on this machine: skipped"
    fi
    echo
    echo "gpu-check: tests exit $rc_tests, bench exit $rc_bench, $((SECONDS - t0)) s"
    [ "$rc_tests" -eq 0 ] && [ "$rc_bench" -eq 0 ]
}

case "${1:-}" in
    pack) pack ;;
    run) run ;;
    model) model ;;
    *) die "usage: bash scripts/gpu-check.sh pack|run|model (see the top of this file)" ;;
esac
