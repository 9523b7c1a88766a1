#!/bin/sh
# The master at scale, as SGE's figures in PERF.md ("scale") were taken: N simulated
# execution hosts (`gantry-execd simulate`, real QUIC sessions and report spools, no job
# process) in a queue sim.q of 4 slots per host with load_thresholds NONE, and SGE's
# experiments, each as one ordinary user (`qsub -b y -q sim.q -o /dev/null -j y ...
# sleep 30`):
#   array  one `qsub -t 1-10000`
#   indiv  2,000 `qsub` processes from one shell loop
#   held   2,000 `qsub -h`, then one `qrls -u USER` (timed from the qrls)
# each with the quota sets off, then on: one set of 100 rules over 25 host groups
# @simg01..@simg25 of N/25 hosts each (per group K: `users {user1} hosts {@simgK} to
# slots=4`, `users {user2,user3} hosts @simgK to slots=8`, `users @testusers hosts
# {@simgK} to slots=4`, `users * hosts @simgK to slots=<the group's capacity>`) and one
# rule `hosts {*} to slots=$num_proc*2`; none binds, so what they cost is overhead.
# Per experiment: seconds until min(jobs, 4N) tasks are dispatched (from the master's
# own "cycle done" log lines: the time of the cycle that reached it), jobs per second,
# the master's CPU seconds and peak RSS over the experiment, and the scheduling cycles
# (count, median and longest).
# Usage: benches/scale.sh [N=1000] [EXPERIMENTS="held array indiv"] [QUOTAS="off on"]
# As root, after deploy/build.sh (release binaries); the user gtbench is created.
# SCALE_PERF=PREFIX: `perf record` the master (with call graphs) during each experiment,
# into PREFIX.EXPERIMENT.QUOTAS (for where the time goes; it slows what it records).
set -eu
N=${1:-1000}
EXPS=${2:-"held array indiv"}
QUOTAS=${3:-"off on"}
BIN=$(cd "$(dirname "$0")/.." && pwd)/target/release
[ $((N % 25)) -eq 0 ] || { echo "N must be a multiple of 25 (25 host groups)" >&2; exit 1; }
. "$(dirname "$0")/sim_cell.sh"

quotas_on() {
    per=$((N / 25))
    k=1
    while [ $k -le 25 ]; do
        g=$(printf 'simg%02d' $k)
        first=$(( (k - 1) * per + 1 ))
        hosts=$(seq "$first" $((first + per - 1)) | awk '{printf "sim%04d ", $1}')
        printf 'group_name @%s\nhostlist %s\n' "$g" "$hosts" > "$D/hg"
        "$Q" -Ahgrp "$D/hg" >/dev/null 2>&1
        k=$((k + 1))
    done
    "$Q" -au user1 testusers >/dev/null 2>&1
    {
        echo "{"
        echo "   name         simgroups"
        echo "   enabled      TRUE"
        k=1
        while [ $k -le 25 ]; do
            g=$(printf 'simg%02d' $k)
            echo "   limit        users {user1} hosts {@$g} to slots=4"
            echo "   limit        users {user2,user3} hosts @$g to slots=8"
            echo "   limit        users @testusers hosts {@$g} to slots=4"
            echo "   limit        users * hosts @$g to slots=$((per * 4))"
            k=$((k + 1))
        done
        echo "}"
        echo "{"
        echo "   name         perhost"
        echo "   enabled      TRUE"
        echo "   limit        hosts {*} to slots=\$num_proc*2"
        echo "}"
    } > "$D/rqs"
    "$Q" -Arqs "$D/rqs" >/dev/null
}

# Wait until the cycles logged after line FROM dispatched TARGET tasks; print the
# epoch of the cycle that did, how many cycles, their median and longest (ms).
dispatched() {
    python3 - "$D/master.log" "$1" "$2" <<'EOF'
import re, sys, time, datetime
path, start, target = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
deadline = time.time() + 900
total, cycles = 0, []
line_no = 0
pat = re.compile(r'^(\S+)Z .*cycle done micros=(\d+) kept=(\d+)')
with open(path) as f:
    while True:
        line = f.readline()
        if not line:
            if time.time() > deadline:
                sys.exit("timed out: %d of %d dispatched" % (total, target))
            time.sleep(0.05)
            continue
        line_no += 1
        if line_no <= start:
            continue
        m = pat.match(line)
        if not m:
            continue
        cycles.append(int(m.group(2)) / 1000)
        total += int(m.group(3))
        if total >= target:
            at = datetime.datetime.fromisoformat(m.group(1)).replace(tzinfo=datetime.timezone.utc).timestamp()
            s = sorted(cycles)
            print("%.6f %d %.1f %.1f" % (at, len(s), s[len(s) // 2], s[-1]))
            break
EOF
}

drain() {
    # Forced (a manager's qdel -f): the next experiment starts on an empty cluster
    # whatever a host does with its kill orders.
    "$BIN/qdel" -f -u gtbench >/dev/null 2>&1 || true
    until [ -z "$(as_user "$BIN/qstat" 2>/dev/null)" ]; do sleep 0.5; done
}

# Until the master is done with what came before (the hosts' reports of the tasks a
# drain killed, a configuration change): at most 5 % of a core for a second (2 min at most).
# Else an experiment's cycles share the cores with the last one's aftermath.
quiesce() {
    until_s=$(( $(date +%s) + 120 ))
    last=$(cpu)
    while sleep 1; do
        c=$(cpu)
        [ $((c - last)) -le $((hz / 20)) ] && break
        [ "$(date +%s)" -ge "$until_s" ] && break
        last=$c
    done
}

cd /tmp
SUB="-b y -q sim.q -o /dev/null -j y"
for quotas in $QUOTAS; do
    [ "$quotas" = on ] && quotas_on
    quiesce
    for e in $EXPS; do
        case $e in
            array) jobs=10000 ;;
            *) jobs=2000 ;;
        esac
        target=$jobs; [ "$target" -gt $((4 * N)) ] && target=$((4 * N))
        if [ "$e" = held ]; then
            as_user sh -c "i=0; while [ \$i -lt $jobs ]; do $BIN/qsub -h $SUB sleep 30 >/dev/null; i=\$((i+1)); done"
            quiesce
        fi
        from=$(wc -l < "$D/master.log")
        PERF=
        if [ -n "${SCALE_PERF:-}" ]; then
            perf record -q -F 1999 --call-graph dwarf,32768 -p "$MPID" \
                -o "$SCALE_PERF.$e.$quotas" >/dev/null 2>&1 &
            PERF=$!
            sleep 2
        fi
        echo 5 > "/proc/$MPID/clear_refs" 2>/dev/null || true
        c0=$(cpu)
        t0=$(now)
        case $e in
            array) as_user "$BIN/qsub" -t "1-$jobs" $SUB sleep 30 >/dev/null ;;
            indiv) as_user sh -c "i=0; while [ \$i -lt $jobs ]; do $BIN/qsub $SUB sleep 30 >/dev/null; i=\$((i+1)); done" ;;
            held) as_user "$BIN/qrls" -u gtbench >/dev/null ;;
        esac
        set -- $(dispatched "$from" "$target")
        c1=$(cpu)
        if [ -n "$PERF" ]; then
            kill -INT "$PERF"
            wait "$PERF" || true
        fi
        peak=$(awk '/^VmHWM:/ {printf "%.0f", $2/1024}' "/proc/$MPID/status")
        awk -v e="$e" -v q="$quotas" -v n="$target" -v t0="$t0" -v at="$1" -v cyc="$2" -v med="$3" -v max="$4" \
            -v cpu=$((c1 - c0)) -v hz="$hz" -v peak="$peak" -v hosts="$N" 'BEGIN {
            s = at - t0
            printf "%-5s quotas %-3s %d hosts: %d dispatched in %.2f s, %.0f jobs/s; master CPU %.2f s, peak RSS %d MiB; %d cycles, median %.1f ms, longest %.1f ms\n",
                e, q, hosts, n, s, n / s, cpu / hz, peak, cyc, med, max }'
        drain
        quiesce
    done
done
