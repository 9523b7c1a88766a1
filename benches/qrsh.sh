#!/bin/sh
# Interactive sessions on an idle one-host cluster, whole processes, release build:
#   (a) `qrsh hostname` round trip (submission, the first cycle, the start, the session
#       joined, the command's output and exit status back): median and p90 of RUNS runs;
#   (b) the remote side's output: `qrsh head -c MB /dev/zero` read to the end, MB/s
#       (median of three);
#   (c) both ways: MB from /dev/zero through `qrsh cat` and back, MB/s (median of
#       three; Gantry only: SGE 8.1.9's qrsh hangs on more than about 64 KiB of input,
#       tests/fixtures/sge/interactive/README.md);
# each as the user gtbench (created if missing). With SGE=1, (a) and (b) of the SGE
# 8.1.9 that ../shared/tools/sge/setup.sh brings up (its qrsh in builtin mode), run
# alternately with Gantry's, in the same call.
# (BIN=DIR takes the binaries from DIR, for A/B runs of two builds.)
# Usage: [SGE=1] [BIN=DIR] benches/qrsh.sh [RUNS=30] [MB=1024]     (as root)
set -eu
RUNS=${1:-30}; MB=${2:-1024}
BIN=${BIN:-$(cd "$(dirname "$0")/.." && pwd)/target/release}
[ -x "$BIN/gantry-master" ] || { echo "build first: deploy/build.sh" >&2; exit 1; }
id gtbench >/dev/null 2>&1 || useradd -m -s /bin/sh gtbench
D=$(mktemp -d); chmod 755 "$D"
PORT=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("",0)); print(s.getsockname()[1])')
"$BIN/gantry-master" init --home "$D/cell" --hostname bench --port "$PORT" >/dev/null
"$BIN/gantry-master" run --home "$D/cell" 2>"$D/master.log" & MPID=$!
EPID=
trap 'kill $MPID $EPID 2>/dev/null || true; wait 2>/dev/null; rm -rf "$D"' EXIT
export GANTRY_HOME="$D/cell"
until "$BIN/qconf" -sm >/dev/null 2>&1; do sleep 0.05; done
printf 'load_report_time 0:0:1\n' > "$D/global"; "$BIN/qconf" -Mconf "$D/global" 2>/dev/null
"$BIN/gantry-execd" run --home "$D/execd" --master "127.0.0.1:$PORT" --hostname benchnode --token-file "$D/cell/join-token" 2>"$D/execd.log" & EPID=$!
until "$BIN/qhost" 2>/dev/null | awk '$1=="benchnode" && $7!="-" {f=1} END {exit !f}'; do sleep 0.1; done
# The host is idle: no load threshold stands in the way of the sessions.
"$BIN/qconf" -rattr queue load_thresholds NONE all.q >/dev/null 2>&1
cd /tmp
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
p90() { sort -n | awk '{a[NR]=$1} END {i=int(NR*0.9+0.999); if (i<1) i=1; print a[i]}'; }

if [ "${SGE:-0}" = 1 ]; then
    # SGE's all.q as Gantry's: no load threshold (a busy build machine puts it in
    # alarm), room for a qrsh whose last job is still leaving; put back at the end.
    SQ="SGE_ROOT=/var/lib/gridengine SGE_CELL=default"
    old_thr=$(env $SQ qconf -sq all.q | awk '$1=="load_thresholds" {print $2}')
    old_slots=$(env $SQ qconf -sq all.q | awk '$1=="slots" {print $2}')
    env $SQ qconf -rattr queue load_thresholds NONE all.q >/dev/null
    env $SQ qconf -rattr queue slots "8,[$(hostname)=8]" all.q >/dev/null
    sleep 3  # the scheduler takes the change at its next run
    trap 'env $SQ qconf -rattr queue load_thresholds "$old_thr" all.q >/dev/null; env $SQ qconf -rattr queue slots "$old_slots" all.q >/dev/null; kill $MPID $EPID 2>/dev/null || true; wait 2>/dev/null; rm -rf "$D"' EXIT
fi
gantry_qrsh() { runuser -u gtbench -- env GANTRY_HOME="$GANTRY_HOME" "$BIN/qrsh" "$@"; }
sge_qrsh() { su - gtbench -c "SGE_ROOT=/var/lib/gridengine SGE_CELL=default /usr/bin/qrsh $*"; }

round_trip() { # which
    t0=$(now); "$1" hostname >/dev/null; t1=$(now)
    awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f\n", (b-a)*1000}'
}
output() { # which
    t0=$(now); "$1" head -c "${MB}M" /dev/zero | wc -c >"$D/bytes"; t1=$(now)
    # (SGE 8.1.9's qrsh loses its session now and then at speed: "commlib error: got
    # read error"; such a run is counted as failed, not as a figure.)
    if [ "$(cat "$D/bytes")" -ne $((MB * 1048576)) ]; then
        echo "$1: $(cat "$D/bytes") bytes came of $((MB * 1048576))" >&2
        echo "$1" >>"$D/failed"
        return
    fi
    awk -v a="$t0" -v b="$t1" -v mb="$MB" 'BEGIN {printf "%.0f\n", mb*1.048576/(b-a)}'
}
stream() { # which
    t0=$(now); head -c "${MB}M" /dev/zero | "$1" cat | wc -c >"$D/bytes"; t1=$(now)
    [ "$(cat "$D/bytes")" -eq $((MB * 1048576)) ] || { echo "$1: $(cat "$D/bytes") bytes came back of $((MB * 1048576))" >&2; exit 1; }
    awk -v a="$t0" -v b="$t1" -v mb="$MB" 'BEGIN {printf "%.0f\n", mb*1.048576/(b-a)}'
}

gantry_qrsh true || { echo "Gantry qrsh failed; master log:" >&2; tail -20 "$D/master.log" >&2; "$BIN/qhost" >&2; exit 1; }  # warm-up
[ "${SGE:-0}" = 1 ] && sge_qrsh true
: >"$D/g_rt"; : >"$D/s_rt"; : >"$D/g_mb"; : >"$D/s_mb"; : >"$D/g_out"; : >"$D/s_out"
i=0; while [ $i -lt "$RUNS" ]; do
    round_trip gantry_qrsh >>"$D/g_rt"
    [ "${SGE:-0}" = 1 ] && round_trip sge_qrsh >>"$D/s_rt"
    i=$((i+1))
done
for _ in 1 2 3; do
    output gantry_qrsh >>"$D/g_out"
    [ "${SGE:-0}" = 1 ] && output sge_qrsh >>"$D/s_out"
    stream gantry_qrsh >>"$D/g_mb"
done
echo "(a) qrsh hostname, $RUNS runs: Gantry median $(median <"$D/g_rt") ms, p90 $(p90 <"$D/g_rt") ms"
[ "${SGE:-0}" = 1 ] && echo "(a) qrsh hostname, $RUNS runs: SGE    median $(median <"$D/s_rt") ms, p90 $(p90 <"$D/s_rt") ms"
echo "(b) $MB MiB of qrsh head's output: Gantry median $(median <"$D/g_out") MB/s (runs: $(tr '\n' ' ' <"$D/g_out"))"
[ "${SGE:-0}" = 1 ] && echo "(b) $MB MiB of qrsh head's output: SGE    median $(median <"$D/s_out") MB/s (runs: $(tr '\n' ' ' <"$D/s_out"))"
[ -s "$D/failed" ] && echo "(b) failed runs (not counted): $(sort "$D/failed" | uniq -c | tr '\n' ' ')"
echo "(c) $MB MiB through qrsh cat and back: Gantry median $(median <"$D/g_mb") MB/s (runs: $(tr '\n' ' ' <"$D/g_mb"))"
exit 0
