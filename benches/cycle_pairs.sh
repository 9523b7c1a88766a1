#!/bin/sh
# Two kinds of scheduling cycle of the issue-4 cluster (1,000 hosts, 10,000 jobs) timed
# alternately, pair by pair, so that what the shared cores do to one run does to the
# other too: per run, the median of five cycles (`GANTRY_CYCLES=KIND` of
# `master/benches/schedule.rs`); per pair, the ratio B / A; at the end the medians.
# Usage: benches/cycle_pairs.sh [A [B [PAIRS]]]   (defaults: accounts groups 10)
#   kinds: plain, quota (100 quota sets), accounts (the jobs' accounts naming 100
#   groups, no tree), groups (the same with a tree of 100 groups), owners (the jobs
#   of 1,000 users with user objects), policies (the same with the share-tree and
#   functional policies on), policies10 (plain's ten users with the policies on)
# BIN_A, BIN_B: the benchmark binaries that time A and B (default: this tree's, built
# first); two builds of the same kind compare code (see benches/cycle_ab.sh).
set -eu
A=${1:-accounts}
B=${2:-groups}
PAIRS=${3:-10}
cd "$(dirname "$0")/.."
if [ -z "${BIN_A:-}" ] || [ -z "${BIN_B:-}" ]; then
    cargo bench -p gantry-master --bench schedule --no-run >/dev/null 2>&1
    BIN=$(ls -t target/release/deps/schedule-* | grep -v '\.d$' | head -1)
fi
BIN_A=${BIN_A:-$BIN}
BIN_B=${BIN_B:-$BIN}
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }
# cycle KIND BINARY: the median of five cycles of KIND, in ms.
cycle() { GANTRY_CYCLE_TIMES=1 GANTRY_CYCLES=$1 "$2" --bench 2>&1 | awk '/ cycle / {print $3}' | median; }
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
for i in $(seq 1 "$PAIRS"); do
    a=$(cycle "$A" "$BIN_A")
    b=$(cycle "$B" "$BIN_B")
    r=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b / a}')
    echo "pair $i: $A $a ms, $B $b ms, $r x"
    echo "$a $b $r" >>"$OUT"
done
echo "median: $A $(cut -d' ' -f1 "$OUT" | median) ms, $B $(cut -d' ' -f2 "$OUT" | median) ms, ratio $(cut -d' ' -f3 "$OUT" | median) x"
