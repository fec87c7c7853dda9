#!/usr/bin/env bash
# Fuzzing (issue 40, "No input kills the Jupyter kernel"): runs each fuzz target for a given
# time with the workspace's own mutation fuzzer (crates/fuzzing), and prints per target the
# inputs run, inputs/s and crashes (the goal: 0).
#
#   bash benches/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default: 60 s, every target)
#
# Targets: magic (magic-line parser + evaluator, %%cuda header), ptx (ptxsim's PTX parser and
# lowering), npy and image (the %load loaders), wire_signed and wire_raw (the Jupyter message
# parser, with frames signed by the harness or as they come), frame_codec (the nb and GPU-worker
# socket framing). Each is the ignored `*_long` test
# of its file (tests/fuzz_*.rs, crates/protocol/tests/fuzz_wire.rs, crates/ptxsim/tests/fuzz.rs),
# built in release.
#
# Environment: FUZZ_SEED (default: from the clock, printed), FUZZ_HANG_SECS (an input running
# longer is a hang, default 20), CARGO_TARGET_DIR. Crashing inputs go to
# target/fuzz-crashes/; an input that aborted the process (a stack overflow) is copied there
# from target/fuzz-crash-TARGET. Reproduce one with
#   FUZZ_REPLAY=FILE cargo test --release --test fuzz_magic -- --ignored --exact magic_long
# Exits non-zero if any target crashed.
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
all=(magic ptx npy image wire_signed wire_raw frame_codec)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
target_dir=${CARGO_TARGET_DIR:-target}
mkdir -p "$target_dir/fuzz-crashes"

# TARGET -> "PACKAGE TEST_FILE TEST_NAME"
where() {
    case "$1" in
        magic) echo "nbcuda fuzz_magic magic_long" ;;
        ptx) echo "ptxsim fuzz ptx_long" ;;
        npy) echo "nbcuda fuzz_loaders npy_long" ;;
        image) echo "nbcuda fuzz_loaders image_long" ;;
        wire_signed) echo "nbcuda-protocol fuzz_wire wire_signed_long" ;;
        wire_raw) echo "nbcuda-protocol fuzz_wire wire_raw_long" ;;
        frame_codec) echo "nbcuda fuzz_frames frame_codec_long" ;;
        *) return 1 ;;
    esac
}
for t in "${targets[@]}"; do
    where "$t" >/dev/null || { echo "fuzz.sh: unknown target '$t' (targets: ${all[*]})" >&2; exit 2; }
done

echo "==> building the fuzz targets (release)" >&2
cargo test --release -p nbcuda --test fuzz_magic --test fuzz_loaders --test fuzz_frames --no-run -q >&2 &&
    cargo test --release -p nbcuda-protocol --test fuzz_wire --no-run -q >&2 &&
    cargo test --release -p ptxsim --test fuzz --no-run -q >&2 || { echo "fuzz.sh: build failed" >&2; exit 1; }

log=$(mktemp "${TMPDIR:-/tmp}/nbcuda-fuzz.XXXXXX")
trap 'rm -f "$log"' EXIT
failed=0
rows=()
for t in "${targets[@]}"; do
    read -r pkg file test <<<"$(where "$t")"
    echo "==> $t: ${seconds} s" >&2
    FUZZ_SECONDS=$seconds cargo test --release -q -p "$pkg" --test "$file" -- \
        --ignored --exact "$test" --nocapture >"$log" 2>&1
    rc=$?
    result=$(grep -o 'fuzz-result .*' "$log" | tail -1)
    if [ -n "$result" ]; then
        val() { echo "$result" | grep -o "$1=[^ ]*" | cut -d= -f2; }
        rows+=("$(printf '%-12s %10s %10s %8s %8s  %s' "$t" "$(val inputs)" "$(val per_sec)" "$(val seconds)" "$(val crashes)" "$(val seed)")")
        [ "$(val crashes)" != 0 ] && failed=1 && grep -E '^- |saved to' "$log" | head -20 >&2
    else
        # No result line: the process aborted (stack overflow) or hung.
        failed=1
        seed=$(grep -o 'seed 0x[0-9a-f]*' "$log" | head -1 | cut -d' ' -f2)
        saved="$target_dir/fuzz-crashes/$t-abort-${seed:-unknown}"
        [ -f "$target_dir/fuzz-crash-$t" ] && cp "$target_dir/fuzz-crash-$t" "$saved"
        rows+=("$(printf '%-12s %10s %10s %8s %8s  %s' "$t" "?" "?" "?" "abort" "${seed:-?} (input: $saved)")")
        grep -E 'overflowed|hangs|aborted|panicked' "$log" | head -5 >&2
        echo "--- last lines of its output:" >&2
        tail -15 "$log" >&2
    fi
    [ "$rc" -ne 0 ] && failed=1
done

echo
printf '%-12s %10s %10s %8s %8s  %s\n' target inputs inputs/s seconds crashes seed
for r in "${rows[@]}"; do echo "$r"; done
exit $failed
