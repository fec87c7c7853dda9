#!/usr/bin/env bash
# What ptxsim's counters cost when they are off (issue 34: at most 2%): the bench example of
# this checkout against the same example built from BASE, a commit before counters existed,
# launches alternating between the two binaries in one run, best of ROUNDS per case.
#
#   bash benches/counters_off.sh [BASE] [ROUNDS]     (defaults: 0ce1be7, 7)
#
# BASE is checked out in a git worktree under target/counters-base/ and built there (ptxsim
# only, a few minutes the first time). Prints per case the best seconds of each and
# here/base; the last line is `counters_off: worst_ratio=R` (the goal: R <= 1.02).
set -euo pipefail
cd "$(dirname "$0")/.."
AB_CASES="vecAdd 4194304,matmulTiled 65536,reduceBlockTree 1048576,blur3x3 1048576,matmulNaive 65536" \
    AB_LABEL=counters_off exec bash benches/ptxsim_ab.sh "${1:-0ce1be7}" "${2:-7}"
