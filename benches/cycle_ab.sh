#!/bin/sh
# One kind of scheduling cycle (see `master/benches/schedule.rs`, `GANTRY_CYCLES`) timed
# with two builds of the schedule benchmark alternately, pair by pair, so that what the
# shared cores do to one run does to the other too: per run, the median of five
# cycles; per pair, the ratio NEW / BASE; at the end the medians. For a restructuring
# that must not slow the scheduler: build the benchmark at the base commit, copy its
# binary aside, build it again at the new one.
# Usage: benches/cycle_ab.sh BASE_BIN NEW_BIN [KIND [PAIRS]]   (defaults: plain 10)
set -eu
BASE=$1
NEW=$2
KIND=${3:-plain}
PAIRS=${4:-10}
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }
cycle() { GANTRY_CYCLE_TIMES=1 GANTRY_CYCLES=$KIND "$1" --bench 2>&1 | awk '/ cycle / {print $3}' | median; }
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
for i in $(seq 1 "$PAIRS"); do
    a=$(cycle "$BASE")
    b=$(cycle "$NEW")
    r=$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", b / a}')
    echo "pair $i: $KIND base $a ms, new $b ms, $r x"
    echo "$a $b $r" >>"$OUT"
done
echo "median: $KIND base $(cut -d' ' -f1 "$OUT" | median) ms, new $(cut -d' ' -f2 "$OUT" | median) ms, ratio $(cut -d' ' -f3 "$OUT" | median) x"
