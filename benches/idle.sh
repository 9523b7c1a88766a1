#!/bin/sh
# Idle footprint of the daemons, measured from outside as whole processes:
#   - resident memory (VmRSS) of gantry-master and gantry-execd once the execd has
#     joined and reported, and again after the measuring window;
#   - CPU time (user+system, from /proc/PID/stat) an idle execd and master use per minute.
# Usage: benches/idle.sh [RUNS] [WINDOW_SECONDS] [LOAD_REPORT_TIME]
# Prints one line per run and the medians. Uses the release binaries.
set -eu
RUNS=${1:-3}
WINDOW=${2:-60}
LRT=${3:-0:0:40}
BIN=$(cd "$(dirname "$0")/.." && pwd)/target/release
[ -x "$BIN/gantry-master" ] || { echo "build first: cargo build --release --workspace --bins" >&2; exit 1; }
TCK=$(getconf CLK_TCK)

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }

OUT=$(mktemp -d)
trap 'kill $MPID $EPID 2>/dev/null || true; rm -rf "$OUT"' EXIT
MPID=; EPID=
for run in $(seq 1 "$RUNS"); do
    D=$(mktemp -d)
    PORT=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("",0)); print(s.getsockname()[1])')
    "$BIN/gantry-master" init --home "$D/cell" --hostname bench --port "$PORT" >/dev/null
    "$BIN/gantry-master" run --home "$D/cell" 2>"$D/master.log" & MPID=$!
    until GANTRY_HOME="$D/cell" "$BIN/qconf" -sm >/dev/null 2>&1; do sleep 0.1; done
    printf 'load_report_time %s\n' "$LRT" > "$D/global"
    GANTRY_HOME="$D/cell" "$BIN/qconf" -Mconf "$D/global" 2>/dev/null
    "$BIN/gantry-execd" run --home "$D/execd" --master "127.0.0.1:$PORT" --hostname benchnode --token-file "$D/cell/join-token" 2>"$D/execd.log" & EPID=$!
    until GANTRY_HOME="$D/cell" "$BIN/qhost" | grep -q '^benchnode .* [0-9]\.[0-9][0-9] '; do sleep 0.2; done
    sleep 2
    m0=$(cpu_ticks $MPID); e0=$(cpu_ticks $EPID)
    sleep "$WINDOW"
    m1=$(cpu_ticks $MPID); e1=$(cpu_ticks $EPID)
    mr=$(rss_kib $MPID); er=$(rss_kib $EPID)
    ecpu=$(awk -v a="$e0" -v b="$e1" -v t="$TCK" -v w="$WINDOW" 'BEGIN {printf "%.3f", (b-a)/t*60/w}')
    mcpu=$(awk -v a="$m0" -v b="$m1" -v t="$TCK" -v w="$WINDOW" 'BEGIN {printf "%.3f", (b-a)/t*60/w}')
    echo "run $run: master RSS ${mr} KiB, execd RSS ${er} KiB, execd CPU ${ecpu} s/min, master CPU ${mcpu} s/min"
    echo "$mr" >> "$OUT/mr"; echo "$er" >> "$OUT/er"; echo "$ecpu" >> "$OUT/ec"; echo "$mcpu" >> "$OUT/mc"
    kill $MPID $EPID; wait $MPID $EPID 2>/dev/null || true
    rm -rf "$D"
done
echo "median over $RUNS runs (window ${WINDOW} s, load_report_time $LRT):"
echo "  master idle RSS: $(median < "$OUT/mr") KiB"
echo "  execd idle RSS:  $(median < "$OUT/er") KiB"
echo "  execd CPU:       $(median < "$OUT/ec") s per minute"
echo "  master CPU:      $(median < "$OUT/mc") s per minute"
