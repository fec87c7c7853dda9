#!/usr/bin/env bash
# ptxsim's speed against an older commit (issue 39: a refactoring keeps every figure of
# benches/ptxsim.sh within 5%): the bench example of this checkout against the same example
# built from BASE, launches alternating between the two binaries in one run, best of ROUNDS
# per case, on all nine tutorial kernels of benches/ptxsim.sh.
#
#   bash benches/ptxsim_ab.sh BASE [ROUNDS]     (default ROUNDS: 5)
#
# BASE is checked out in a git worktree under target/counters-base/ and built there (ptxsim
# only, a few minutes the first time). Prints per case the best seconds of each and
# here/base; the last line is `LABEL: worst_ratio=R` (the goal: R <= 1.05).
#
# Environment: AB_CASES ("NAME THREADS" pairs separated by commas; default: the nine kernels),
# AB_LABEL (default ptxsim_ab), AB_WORKERS (the simulator's worker threads; default: one per
# core. 1 takes the contention between workers out, e.g. of global atomics on shared lines).
# benches/counters_off.sh runs this with its own cases.
set -euo pipefail
cd "$(dirname "$0")/.."

base=${1:?usage: ptxsim_ab.sh BASE [ROUNDS]}
rounds=${2:-5}
dir=target/counters-base
cargo build --release -p ptxsim --example bench >&2
if [ ! -d "$dir/src" ]; then
    git worktree add --force --detach "$dir/src" "$base" >&2
else
    git -C "$dir/src" checkout --detach -q "$base"
fi
(cd "$dir/src" && CARGO_TARGET_DIR="$PWD/../target" cargo build --release -p ptxsim --example bench >&2)
here=target/release/examples/bench
there=$dir/target/release/examples/bench

best() { # best seconds of one --profile run's output
    grep -o '[0-9.]*e[-+][0-9]* s$' | cut -d' ' -f1
}

printf '%-18s %9s %11s %11s %9s\n' case threads "here s" "base s" here/base
worst=0
cases=${AB_CASES:-vecAdd 4194304,matmulNaive 65536,matmulTiled 65536,reduceBlockTree 1048576,reduceWarpShuffle 1048576,histogramShared 1048576,blur3x3 1048576,heatStep 1048576,binParticles 1048576}
IFS=, read -r -a specs <<<"$cases"
for spec in "${specs[@]}"; do
    read -r name threads <<<"$spec"
    h=inf b=inf
    for _ in $(seq "$rounds"); do
        x=$("$here" --profile "$name" "$threads" --repeat 3 ${AB_WORKERS:+--workers "$AB_WORKERS"} 2>&1 | best)
        y=$("$there" --profile "$name" "$threads" --repeat 3 ${AB_WORKERS:+--workers "$AB_WORKERS"} 2>&1 | best)
        h=$(python3 -c "print(min(float('$h'), float('$x')))")
        b=$(python3 -c "print(min(float('$b'), float('$y')))")
    done
    r=$(python3 -c "print(f'{$h / $b:.3f}')")
    worst=$(python3 -c "print(max($worst, $r))")
    printf '%-18s %9s %11.4f %11.4f %9s\n' "$name" "$threads" "$h" "$b" "$r"
done
echo "${AB_LABEL:-ptxsim_ab}: worst_ratio=$worst"
