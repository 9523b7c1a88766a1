#!/bin/sh
# A standby master's takeover, whole processes: two masters on one cell (the second
# started with --standby), the active one killed with SIGKILL, the time until the
# standby answers `qconf -sm` (the q* commands' socket, its spool opened and its journal
# applied); then the killed one comes back as the standby and the next round kills the
# other. The spool holds HELD held jobs, so that the takeover reads a real spool.
# Prints each round's seconds, then the median and the largest.
# (BIN=DIR takes the binaries from DIR.)
# Usage: [BIN=DIR] benches/standby.sh [ROUNDS=10] [HELD=2000]
set -eu
ROUNDS=${1:-10}; HELD=${2:-2000}
BIN=${BIN:-$(cd "$(dirname "$0")/.." && pwd)/target/release}
[ -x "$BIN/gantry-master" ] || { echo "build first: deploy/build.sh" >&2; exit 1; }
D=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("",0)); print(s.getsockname()[1])')
"$BIN/gantry-master" init --home "$D/cell" --hostname bench --port "$PORT" >/dev/null
export GANTRY_HOME="$D/cell"
"$BIN/gantry-master" run --home "$D/cell" 2>>"$D/master-0.log" & A=$!
until "$BIN/qconf" -sm >/dev/null 2>&1; do sleep 0.02; done
"$BIN/gantry-master" run --home "$D/cell" --standby 2>>"$D/master-1.log" & B=$!
trap 'kill -9 $A $B 2>/dev/null || true; wait 2>/dev/null; rm -rf "$D"' EXIT
printf 'min_uid 0\nmin_gid 0\n' >"$D/global"; "$BIN/qconf" -Mconf "$D/global" 2>/dev/null
i=0
while [ $i -lt "$HELD" ]; do "$BIN/qsub" -h -b y true >/dev/null; i=$((i + 1)); done
now() { date +%s.%N; }
times=""
r=0
while [ $r -lt "$ROUNDS" ]; do
    # The standby waits on the spool's lock.
    until grep -q "taking over when it dies" "$D/master-1.log"; do sleep 0.02; done
    t0=$(now)
    kill -9 "$A"; wait "$A" 2>/dev/null || true
    until "$BIN/qconf" -sm >/dev/null 2>&1; do sleep 0.005; done
    t=$(echo "$(now) $t0" | awk '{printf "%.3f", $1 - $2}')
    echo "round $r: served after ${t} s"
    times="$times $t"
    # The killed one comes back as the standby.
    mv "$D/master-1.log" "$D/master-0.log"
    A=$B
    "$BIN/gantry-master" run --home "$D/cell" --standby 2>>"$D/master-1.log" & B=$!
    r=$((r + 1))
done
[ "$("$BIN/qstat" -u '*' | awk 'NR > 2' | wc -l)" -eq "$HELD" ] || { echo "jobs lost" >&2; exit 1; }
echo "$times" | tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {
    printf "median %.3f s, largest %.3f s over %d takeovers\n", a[int((NR+1)/2)], a[NR], NR }'
