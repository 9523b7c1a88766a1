#!/bin/sh
# The master's HTTP listener (release build) on a cell of N simulated hosts:
#   (a) GET /api/v1/jobs with JOBS pending jobs, over HTTPS with a user certificate
#       (a new curl process and TLS connection each time): median of REPS.
#   (b) GET /metrics on the same cell: median of REPS.
#   (c) submission throughput: SUB jobs through POST /api/v1/jobs, one curl process
#       (and TLS handshake) per job, against SUB `qsub -b y` processes, run alternately
#       in rounds of SUB/5; and SUB jobs through one curl process that keeps its
#       connection (HTTP keep-alive), as a workflow manager's client would.
# The rest of the JOBS are submitted through the API with keep-alive.
# Usage: benches/http.sh [N=1000] [JOBS=10000] [SUB=500] [REPS=11]
# Must run as root (jobs are the test user gtbench's, created if missing).
set -eu
N=${1:-1000}; JOBS=${2:-10000}; SUB=${3:-500}; REPS=${4:-11}
BIN=$(cd "$(dirname "$0")/.." && pwd)/target/release
. "$(dirname "$0")/sim_cell.sh"
HPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'max_aj_instances 0\nhttp_listen 127.0.0.1:%s\n' "$HPORT" > "$D/global"
"$Q" -Mconf "$D/global" >/dev/null 2>&1
"$BIN/gantry-master" user-cert --home "$D/cell" gtbench --out "$D" >/dev/null
TLS="--cacert $D/cell/ca.pem --cert $D/gtbench.pem --key $D/gtbench.key --resolve bench:$HPORT:127.0.0.1"
URL="https://bench:$HPORT"
# shellcheck disable=SC2086
until curl -s $TLS -o /dev/null "$URL/api/v1/jobs"; do sleep 0.1; done
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ms() { awk '{printf "%.1f\n", $1*1000}'; }
printf '{"args": ["-h", "-b", "y", "/bin/true"]}' > "$D/job.json"

# (c) one process per job, alternately with qsub.
api_s=0; qsub_s=0; round=$((SUB / 5)); r=0
while [ $r -lt 5 ]; do
    t0=$(now); i=0
    while [ $i -lt "$round" ]; do
        # shellcheck disable=SC2086
        curl -s -o /dev/null $TLS -H 'content-type: application/json' --data-binary "@$D/job.json" "$URL/api/v1/jobs"
        i=$((i+1))
    done
    t1=$(now); i=0
    while [ $i -lt "$round" ]; do as_user "$BIN/qsub" -h -b y /bin/true >/dev/null; i=$((i+1)); done
    t2=$(now)
    api_s=$(awk -v s="$api_s" -v a="$t0" -v b="$t1" 'BEGIN {print s+b-a}')
    qsub_s=$(awk -v s="$qsub_s" -v a="$t1" -v b="$t2" 'BEGIN {print s+b-a}')
    r=$((r+1))
done
n=$((round * 5))
echo "(c) $n jobs, one process each: API (curl, TLS handshake each) $(awk -v n="$n" -v s="$api_s" 'BEGIN {printf "%.0f jobs/s", n/s}'), qsub (runuser per call) $(awk -v n="$n" -v s="$qsub_s" 'BEGIN {printf "%.0f jobs/s", n/s}'): API/qsub $(awk -v a="$api_s" -v q="$qsub_s" 'BEGIN {printf "%.2fx", q/a}')"
# Keep-alive: one curl, SUB requests on one connection.
: > "$D/many.conf"
i=0
while [ $i -lt "$SUB" ]; do
    [ $i -gt 0 ] && echo next >> "$D/many.conf"
    # Options do not carry over `next`: each transfer names its certificate (the
    # connection is still reused, its TLS options being the same).
    printf 'url = "%s/api/v1/jobs"\ndata-binary = "@%s/job.json"\nheader = "content-type: application/json"\noutput = "/dev/null"\ncacert = "%s"\ncert = "%s"\nkey = "%s"\nresolve = "bench:%s:127.0.0.1"\n' \
        "$URL" "$D" "$D/cell/ca.pem" "$D/gtbench.pem" "$D/gtbench.key" "$HPORT" >> "$D/many.conf"
    i=$((i+1))
done
t0=$(now)
curl -s --config "$D/many.conf"
t1=$(now)
echo "(c) $SUB jobs through one kept connection: $(awk -v n="$SUB" -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f jobs/s", n/(b-a)}')"
# Fill up to JOBS with kept connections.
have=$((n * 2 + SUB))
while [ "$have" -lt "$JOBS" ]; do
    curl -s --config "$D/many.conf"
    have=$((have + SUB))
done
listed=$(curl -s $TLS "$URL/api/v1/jobs" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))')

# (a) the listing.
: > "$D/list.t"
i=0
while [ $i -lt "$REPS" ]; do
    # shellcheck disable=SC2086
    curl -s -o /dev/null -w '%{time_total}\n' $TLS "$URL/api/v1/jobs" >> "$D/list.t"
    i=$((i+1))
done
bytes=$(curl -s $TLS "$URL/api/v1/jobs" | wc -c)
echo "(a) GET /api/v1/jobs, $listed jobs ($bytes bytes): median $(median < "$D/list.t" | ms) ms over $REPS (min $(sort -n "$D/list.t" | head -1 | ms), max $(sort -n "$D/list.t" | tail -1 | ms))"

# (b) /metrics.
: > "$D/metrics.t"
i=0
while [ $i -lt "$REPS" ]; do
    # shellcheck disable=SC2086
    curl -s -o /dev/null -w '%{time_total}\n' $TLS "$URL/metrics" >> "$D/metrics.t"
    i=$((i+1))
done
# shellcheck disable=SC2086
lines=$(curl -s $TLS "$URL/metrics" | wc -l)
echo "(b) GET /metrics on $N hosts, $listed jobs ($lines lines): median $(median < "$D/metrics.t" | ms) ms over $REPS (min $(sort -n "$D/metrics.t" | head -1 | ms), max $(sort -n "$D/metrics.t" | tail -1 | ms))"
grep 'gauges read for' "$D/master.log" | sed 's/.*micros=\([0-9]*\).*/\1/' | median | awk '{printf "(b) the actor read the gauges in a median %.1f ms\n", $1/1000}'
echo "master RSS $(awk '/^VmRSS:/ {printf "%.0f MiB", $2/1024}' /proc/$MPID/status)"
