#!/bin/sh
# One kind of scheduling cycle timed with two builds of the schedule benchmark
# (`master/benches/schedule.rs`) alternately, pair by pair (benches/cycle_pairs.sh with
# the same kind on both sides): per pair the ratio NEW / BASE, at the end the medians.
# For a change that must not slow the scheduler: build the benchmark at the base
# commit, copy its binary aside, build it again at the new one.
# Usage: benches/cycle_ab.sh BASE_BIN NEW_BIN [KIND [PAIRS]]   (defaults: plain 10)
set -eu
KIND=${3:-plain}
BIN_A=$1 BIN_B=$2 exec "$(dirname "$0")/cycle_pairs.sh" "$KIND" "$KIND" "${4:-10}"
