#!/bin/sh
# Many clients at once against a cell of N simulated hosts (issue 17, part 4): the
# cluster full (4N tasks of one array running) and PENDING more jobs waiting, then
# SUBMITTERS parallel loops of `qsub` and POLLERS parallel loops of `qstat` (all the
# jobs: the one user owns them) for SECONDS seconds, each client a process of its own
# and every request one it starts,
# as users run them. Prints per kind how many requests, how many failed (non-zero exit
# or no answer in 60 s), and their median, 95th percentile and longest time; the
# master's RSS before, at its peak and after; and whether the master logged a refused
# connection; and the scheduling cycles meanwhile (count, median, longest).
# Usage: benches/clients.sh [N=1000] [PENDING=10000] [SUBMITTERS=32] [POLLERS=8] [SECONDS=60]
# As root, after deploy/build.sh (release binaries); the user gtbench is created.
set -eu
N=${1:-1000}
PENDING=${2:-10000}
SUBMITTERS=${3:-32}
POLLERS=${4:-8}
SECONDS_=${5:-60}
BIN=$(cd "$(dirname "$0")/.." && pwd)/target/release
. "$(dirname "$0")/sim_cell.sh"
cd /tmp
SUB="-b y -q sim.q -o /dev/null -j y"
rss() { awk '/^VmRSS:/ {printf "%.0f", $2/1024}' "/proc/$MPID/status"; }

# The cluster full: one array of 4N tasks that run for an hour.
as_user "$BIN/qsub" -t "1-$((4 * N))" $SUB sleep 3600 >/dev/null
until [ "$(as_user "$BIN/qstat" -s r 2>/dev/null | awk 'NR > 2' | wc -l)" -ge $((4 * N)) ]; do sleep 1; done
# PENDING single jobs waiting behind it, submitted four at a time.
t0=$(now)
fails=$(seq "$PENDING" | as_user xargs -P 4 -n 1 sh -c "$BIN/qsub $SUB sleep 3600 >/dev/null || echo failed" | grep -c failed || true)
[ "$fails" -eq 0 ] || { echo "$fails of $PENDING submissions failed" >&2; exit 1; }
t1=$(now)
waiting=$(as_user "$BIN/qstat" -s p | awk 'NR > 2' | wc -l)
echo "cell: $N hosts, $((4 * N)) tasks running, $waiting jobs pending (submitted in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.0f s", b-a}')); master RSS $(rss) MiB"
echo 5 > "/proc/$MPID/clear_refs" 2>/dev/null || true
before=$(rss)
from=$(wc -l < "$D/master.log")
c0=$(cpu)
as_user python3 - "$BIN" "$SUBMITTERS" "$POLLERS" "$SECONDS_" "$SUB" <<'PY'
import json, os, signal, sys, tempfile, time
binary, submitters, pollers, seconds, sub = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
kinds = {"qsub": [binary + "/qsub"] + sub.split() + ["sleep", "3600"], "qstat": [binary + "/qstat"]}
quiet = [(os.POSIX_SPAWN_OPEN, fd, "/dev/null", os.O_WRONLY, 0) for fd in (1, 2)]
end = time.monotonic() + seconds
out = tempfile.mkdtemp()
# Every client a process of its own (as users' shells are), not a thread of one
# interpreter: the times are not the interpreter's lock's.
def client(kind, n):
    argv, results, child = kinds[kind], [], [0]
    def expire(*_):
        # A request still unanswered after 60 s counts as failed.
        if child[0]:
            os.kill(child[0], signal.SIGKILL)
    signal.signal(signal.SIGALRM, expire)
    while time.monotonic() < end:
        t = time.monotonic()
        child[0] = os.posix_spawn(argv[0], argv, os.environ, file_actions=quiet)
        signal.alarm(60)
        # wait4: the request's own CPU time too (user and system), to tell computing
        # from waiting.
        _, status, usage = os.wait4(child[0], 0)
        signal.alarm(0)
        took = time.monotonic() - t
        results.append((took, os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime))
    with open(os.path.join(out, "%s.%d" % (kind, n)), "w") as f:
        json.dump(results, f)
clients = [("qsub", n) for n in range(submitters)] + [("qstat", n) for n in range(pollers)]
pids = []
for kind, n in clients:
    pid = os.fork()
    if pid == 0:
        try:
            client(kind, n)
        finally:
            os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
results = {k: [] for k in kinds}
for kind, n in clients:
    with open(os.path.join(out, "%s.%d" % (kind, n))) as f:
        results[kind].extend(json.load(f))
    os.unlink(os.path.join(out, "%s.%d" % (kind, n)))
os.rmdir(out)
for kind, rs in results.items():
    times = sorted(t for t, _, _ in rs)
    cpus = sorted(c for _, _, c in rs)
    failed = sum(1 for _, rc, _ in rs if rc != 0)
    n = len(times)
    pct = lambda xs, p: xs[min(n - 1, int(p * n))] * 1000
    print("%-5s %d clients: %d requests, %d failed; median %.0f ms, 95th percentile %.0f ms, longest %.0f ms; the client's CPU median %.1f ms"
          % (kind, submitters if kind == "qsub" else pollers, n, failed, pct(times, 0.5), pct(times, 0.95), times[-1] * 1000, pct(cpus, 0.5)))
PY
c1=$(cpu)
after=$(rss)
peak=$(awk '/^VmHWM:/ {printf "%.0f", $2/1024}' "/proc/$MPID/status")
refused=$(tail -n +"$from" "$D/master.log" | grep -ciE 'refus|too many|connection (limit|rejected)' || true)
# The scheduling cycles meanwhile: the cluster full, nothing placeable (each qsub asks
# for one).
tail -n +"$from" "$D/master.log" | sed -n 's/.*cycle done micros=\([0-9]*\).* quiet=\([a-z]*\).*/\1 \2/p' | sort -n |
    awk '{a[NR]=$1; q+=($2=="true")} END {if (NR) printf "cycles: %d (%d quiet), median %.1f ms, longest %.1f ms\n", NR, q, a[int((NR+1)/2)]/1000, a[NR]/1000}'
# Where the master's part of each qstat went: waiting for a turn at making a list (one
# per core at once), for the actor's answer, making and encoding the rows (medians).
tail -n +"$from" "$D/master.log" | sed -n 's/.*jobs listed turn_micros=\([0-9]*\) actor_micros=\([0-9]*\) made_micros=\([0-9]*\) total_micros=\([0-9]*\) \(written_micros=\([0-9]*\) \)\{0,1\}bytes=\([0-9]*\)\( batch=\([0-9]*\)\)\{0,1\}.*/\1 \2 \3 \4 \7 \6 \9/p' |
    python3 -c '
import sys
rows = [list(map(int, l.split())) for l in sys.stdin]
if rows:
    med = lambda i: sorted(r[i] for r in rows)[len(rows) // 2]
    written = [r[5] for r in rows if len(r) > 5]
    batch = [r[6] for r in rows if len(r) > 6]
    print("master per qstat (median of %d): turn %.1f ms, actor %.1f ms, rows made %.1f ms, in all %.1f ms; %.1f MB%s%s"
          % (len(rows), med(0) / 1e3, med(1) / 1e3, med(2) / 1e3, med(3) / 1e3, med(4) / 1e6,
             "; written by the thread that made them in %.1f ms" % (sorted(written)[len(written) // 2] / 1e3) if written else "",
             "; answered with %d others (median), %d listings made" % (sorted(batch)[len(batch) // 2] - 1, sum(1.0 / b for b in batch) + 0.5) if batch else ""))'
echo "master: RSS $before MiB before, peak $peak MiB, $after MiB after; CPU $(awk -v c=$((c1 - c0)) -v hz="$hz" 'BEGIN {printf "%.1f", c / hz}') s; $refused refusals logged"
