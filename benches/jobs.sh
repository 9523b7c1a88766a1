#!/bin/sh
# Job throughput and latency of a one-host cluster, whole processes, release build.
#   (a) N sequential `qsub -b y /bin/true`, one qsub process each, no execd connected
#       (pure submission: the jobs stay pending): jobs per second.
#   (b) JOBS trivial jobs on the one-host cluster with SLOTS slots: seconds from the
#       first submission until all are accounted.
#   (c) one array of ARRAY /bin/true tasks: submission until all accounted.
#   (d) one held array of BIG tasks, on the fresh master: submission time and master
#       RSS growth per task.
#   (e) submit-to-running latency on an idle cluster: a job that records when it started;
#       median and p99 over LAT runs.
# Usage: benches/jobs.sh [N=1000] [JOBS=200] [SLOTS=8] [LAT=50] [ARRAY=1000] [BIG=100000]
# Must run as root (jobs run as the test user gtbench, created if missing).
set -eu
N=${1:-1000}; JOBS=${2:-200}; SLOTS=${3:-8}; LAT=${4:-50}; ARRAY=${5:-1000}; BIG=${6:-100000}
BIN=$(cd "$(dirname "$0")/.." && pwd)/target/release
[ -x "$BIN/gantry-master" ] || { echo "build first: deploy/build.sh" >&2; exit 1; }
# The figures are for the commands as deploy/build.sh links them (qsub static).
if readelf -d "$BIN/qsub" | grep -q NEEDED; then
    echo "note: $BIN/qsub is dynamically linked (cargo build); deploy/build.sh links it statically" >&2
fi
id gtbench >/dev/null 2>&1 || useradd -m -s /bin/sh gtbench
D=$(mktemp -d); chmod 755 "$D"
PORT=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("",0)); print(s.getsockname()[1])')
"$BIN/gantry-master" init --home "$D/cell" --hostname bench --port "$PORT" >/dev/null
"$BIN/gantry-master" run --home "$D/cell" 2>"$D/master.log" & MPID=$!
EPID=
trap 'kill $MPID $EPID 2>/dev/null || true; wait 2>/dev/null; rm -rf "$D"' EXIT
export GANTRY_HOME="$D/cell"
until "$BIN/qconf" -sm >/dev/null 2>&1; do sleep 0.05; done
printf 'load_report_time 0:0:1\nmax_aj_tasks 0\n' > "$D/global"; "$BIN/qconf" -Mconf "$D/global" 2>/dev/null
now() { date +%s.%N; }
as_user() { runuser -u gtbench -- "$@"; }

cd /tmp
# (d) a held array of BIG tasks: submission time and master memory per pending task,
# on the fresh master (later runs would leave freed heap that hides the growth).
rss0=$(awk '/^VmRSS:/ {print $2}' /proc/$MPID/status)
t0=$(now)
as_user "$BIN/qsub" -h -t "1-$BIG" -b y /bin/true >/dev/null
t1=$(now)
rss1=$(awk '/^VmRSS:/ {print $2}' /proc/$MPID/status)
echo "(d) held array of $BIG tasks: submitted in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f s", b-a}'), master RSS $rss0 -> $rss1 KiB ($(awk -v a="$rss0" -v b="$rss1" -v n="$BIG" 'BEGIN {printf "%.0f", (b-a)*1024/n}') bytes per pending task)"
as_user "$BIN/qdel" -u gtbench >/dev/null

# (a) submissions, no execd: everything stays pending.
t0=$(now)
i=0; while [ $i -lt "$N" ]; do as_user "$BIN/qsub" -b y /bin/true >/dev/null; i=$((i+1)); done
t1=$(now)
echo "(a) $N sequential qsub processes (runuser per call): $(awk -v a="$t0" -v b="$t1" -v n="$N" 'BEGIN {printf "%.1f jobs/s (%.3f s)", n/(b-a), b-a}')"
# The same without runuser's own cost, as root's jobs are refused: time qsub -help-free
# submissions through a single shell loop of the user.
t0=$(now)
as_user sh -c "i=0; while [ \$i -lt $N ]; do $BIN/qsub -b y /bin/true >/dev/null; i=\$((i+1)); done"
t1=$(now)
echo "(a) $N sequential qsub processes (one shell loop):    $(awk -v a="$t0" -v b="$t1" -v n="$N" 'BEGIN {printf "%.1f jobs/s (%.3f s)", n/(b-a), b-a}')"
as_user "$BIN/qdel" -u gtbench >/dev/null

# Start the execd with SLOTS slots.
"$BIN/gantry-execd" run --home "$D/execd" --master "127.0.0.1:$PORT" --hostname benchnode --token-file "$D/cell/join-token" 2>"$D/execd.log" & EPID=$!
until "$BIN/qhost" | grep -q '^benchnode .* [0-9]\.[0-9][0-9] '; do sleep 0.1; done
"$BIN/qconf" -mattr queue slots "[benchnode=$SLOTS]" all.q >/dev/null
accounted() { "$BIN/qacct" 2>/dev/null | awk 'NR==4 {print $0}' >/dev/null; }

# (b) JOBS trivial jobs until all accounted.
before=$(as_user "$BIN/qstat" | wc -l)
t0=$(now)
as_user sh -c "i=0; while [ \$i -lt $JOBS ]; do $BIN/qsub -b y /bin/true >/dev/null; i=\$((i+1)); done"
while [ -n "$("$BIN/qstat" -u gtbench)" ]; do sleep 0.02; done
t1=$(now)
echo "(b) $JOBS jobs, $SLOTS slots, first submission to all accounted: $(awk -v a="$t0" -v b="$t1" -v n="$JOBS" 'BEGIN {printf "%.3f s (%.1f jobs/s)", b-a, n/(b-a)}')"

# (c) one array of ARRAY tasks until all accounted.
t0=$(now)
as_user "$BIN/qsub" -t "1-$ARRAY" -o /dev/null -e /dev/null -b y /bin/true >/dev/null
while [ -n "$("$BIN/qstat" -u gtbench)" ]; do sleep 0.02; done
t1=$(now)
echo "(c) array of $ARRAY tasks, $SLOTS slots, submission to all accounted: $(awk -v a="$t0" -v b="$t1" -v n="$ARRAY" 'BEGIN {printf "%.3f s (%.1f tasks/s)", b-a, n/(b-a)}')"

# (e) submit-to-running latency: the job writes its start time; qsub's start is taken
# just before it runs.
: > "$D/lat"
i=0
while [ $i -lt "$LAT" ]; do
    t0=$(now)
    as_user "$BIN/qsub" -sync y -o /dev/null -j y -b y sh -c "date +%s.%N > /tmp/gtbench.start.$i" >/dev/null
    t1=$(cat /tmp/gtbench.start.$i); rm -f /tmp/gtbench.start.$i
    awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", (b-a)*1000}' >> "$D/lat"
    i=$((i+1))
done
sort -n "$D/lat" | awk -v n="$LAT" '{a[NR]=$1} END {m=(n%2)?a[(n+1)/2]:(a[n/2]+a[n/2+1])/2; p=a[int(n*0.99+0.999)]; printf "(e) submit-to-running latency over %d jobs: median %.1f ms, p99 %.1f ms (includes runuser and qsub process start)\n", n, m, p}'
echo "master RSS at the end (after every run above): $(awk '/^VmRSS:/ {print $2}' /proc/$MPID/status) KiB"
