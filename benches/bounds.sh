#!/bin/sh
# What one user or manager can make the master do, measured from outside:
#   (1) master RSS after 40 held jobs with 10 MB job scripts each (target < 50 MB);
#   (2) wall time of `qconf -Mc` with 200,000 attributes (target < 5 s), and the latency
#       of `qstat` run back to back while it is applied and for a second after (the
#       spool checkpoint it makes due follows it; target < 100 ms: the edit must not hold
#       the thread that answers clients).
# Usage: benches/bounds.sh [RUNS]   (as root; release binaries: deploy/build.sh first)
# Prints one line per run and the medians.
set -eu
RUNS=${1:-3}
BIN=$(cd "$(dirname "$0")/.." && pwd)/target/release
[ -x "$BIN/gantry-master" ] || { echo "build first: deploy/build.sh" >&2; exit 1; }
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }
OUT=$(mktemp -d)
MPID=
trap 'kill $MPID 2>/dev/null || true; rm -rf "$OUT"' EXIT
# The job owner: a test user (jobs of root are refused below min_uid).
id gtbench >/dev/null 2>&1 || useradd -m gtbench
for run in $(seq 1 "$RUNS"); do
    D=$(mktemp -d)
    chmod 755 "$D"
    "$BIN/gantry-master" init --home "$D/cell" --hostname bench --port 0 >/dev/null
    "$BIN/gantry-master" run --home "$D/cell" 2>"$D/master.log" & MPID=$!
    export GANTRY_HOME="$D/cell"
    until "$BIN/qconf" -sm >/dev/null 2>&1; do sleep 0.1; done
    # (1) 40 held jobs of 10 MB (10,000,000 bytes) each.
    python3 -c "import sys; sys.stdout.write('#!/bin/sh\ntrue\n' + '#' * (10_000_000 - 15) + '\n')" > "$D/big.sh"
    chmod 644 "$D/big.sh"
    rss0=$(awk '/^VmRSS:/ {print $2}' "/proc/$MPID/status")
    for i in $(seq 1 40); do
        runuser -u gtbench -- env GANTRY_HOME="$D/cell" "$BIN/qsub" -h -o /dev/null -j y "$D/big.sh" >/dev/null
    done
    rss1=$(awk '/^VmRSS:/ {print $2}' "/proc/$MPID/status")
    # (2) the complex list with 200,000 more attributes.
    "$BIN/qconf" -sc > "$D/sc"
    python3 - "$D/sc" "$D/big.sc" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
extra = [f"attr{i} at{i} INT <= YES NO 0 0" for i in range(200000)]
open(sys.argv[2], "w").write("\n".join(lines[:-1] + extra + lines[-1:]) + "\n")
PY
    python3 - "$BIN" "$D/big.sc" > "$D/mc.txt" <<'PY'
import subprocess, sys, threading, time
bin_, path = sys.argv[1], sys.argv[2]
lat = []
done = threading.Event()
def poll():
    while not done.is_set():
        t = time.perf_counter()
        subprocess.run([f"{bin_}/qstat", "-u", "*"], stdout=subprocess.DEVNULL, check=True)
        lat.append(time.perf_counter() - t)
t0 = time.perf_counter()
th = threading.Thread(target=poll); th.start()
subprocess.run([f"{bin_}/qconf", "-Mc", path], stdout=subprocess.DEVNULL, check=True)
mc = time.perf_counter() - t0
time.sleep(1.0)
done.set(); th.join()
lat.sort()
print(f"{mc:.3f} {lat[len(lat)//2]*1000:.1f} {lat[-1]*1000:.1f} {len(lat)}")
PY
    read -r mc qmed qmax qn < "$D/mc.txt"
    echo "run $run: master RSS $rss0 KiB fresh, $rss1 KiB with 40 held 10 MB jobs; qconf -Mc 200,000 attributes ${mc} s; qstat meanwhile median ${qmed} ms, max ${qmax} ms ($qn calls)"
    echo "$rss1 $mc $qmed $qmax" >> "$OUT/all"
    kill $MPID; wait $MPID 2>/dev/null || true; MPID=
    rm -rf "$D"
done
echo "medians: master RSS with 40 held 10 MB jobs $(cut -d' ' -f1 "$OUT/all" | median) KiB; qconf -Mc $(cut -d' ' -f2 "$OUT/all" | median) s; qstat during it median $(cut -d' ' -f3 "$OUT/all" | median) ms, max $(cut -d' ' -f4 "$OUT/all" | median) ms"
