#!/bin/sh
# qrsh -inherit at scale: a 32-slot parallel job over two hosts (16 slots on each, PE
# control_slaves TRUE, job_is_first_task FALSE) starts 64 tasks, two waves of 32 at once
# (16 to each host, as many as the job has slots there), each task `date +%s.%N`. The
# figure per run: from the job script's clock before the first wave to the last task's
# own start (its date), and the whole of the 64 (the second wave waits for the first).
# Two execds on this machine (loopback), release build, as the user gtbench. RUNS jobs;
# medians. Target (issue 37): all 64 started within 1 s.
# Usage: benches/qrsh_inherit.sh [RUNS=5]     (as root)
set -eu
RUNS=${1:-5}
BIN=$(cd "$(dirname "$0")/.." && pwd)/target/release
[ -x "$BIN/gantry-master" ] || { echo "build first: deploy/build.sh" >&2; exit 1; }
id gtbench >/dev/null 2>&1 || useradd -m -s /bin/sh gtbench
D=$(mktemp -d); chmod 755 "$D"; echo "work directory: $D" >&2
PORT=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("",0)); print(s.getsockname()[1])')
"$BIN/gantry-master" init --home "$D/cell" --hostname bench --port "$PORT" >/dev/null
"$BIN/gantry-master" run --home "$D/cell" 2>"$D/master.log" & MPID=$!
E1=; E2=
trap 'kill $MPID $E1 $E2 2>/dev/null || true; wait 2>/dev/null; rm -rf "$D"' EXIT
export GANTRY_HOME="$D/cell"
until "$BIN/qconf" -sm >/dev/null 2>&1; do sleep 0.05; done
printf 'load_report_time 0:0:1\n' > "$D/global"; "$BIN/qconf" -Mconf "$D/global" 2>/dev/null
for h in 1 2; do
    "$BIN/gantry-execd" run --home "$D/execd$h" --master "127.0.0.1:$PORT" --hostname "inh$h" --token-file "$D/cell/join-token" 2>"$D/execd$h.log" &
    [ $h = 1 ] && E1=$! || E2=$!
done
for h in 1 2; do
    until "$BIN/qhost" 2>/dev/null | awk -v h="inh$h" '$1==h && $7!="-" {f=1} END {exit !f}'; do sleep 0.1; done
done
printf 'pe_name inh\nslots 64\nallocation_rule $round_robin\ncontrol_slaves TRUE\njob_is_first_task FALSE\n' > "$D/inh.pe"
"$BIN/qconf" -Ap "$D/inh.pe" >/dev/null 2>&1
# 16 slots on each host (their first reports gave them their processor count).
"$BIN/qconf" -mattr queue slots "16,[inh1=16],[inh2=16]" all.q >/dev/null
"$BIN/qconf" -rattr queue load_thresholds NONE all.q >/dev/null 2>&1
"$BIN/qconf" -aattr queue pe_list inh all.q >/dev/null 2>&1
chmod 1777 "$D"
cat > "$D/job.sh" <<'EOF'
#!/bin/sh
# Two waves of 32 tasks, 16 to each host; each task says when it started.
PATH=$SGE_ROOT/bin/$ARC:$PATH
t0=$(date +%s.%N)
for wave in 1 2; do
    i=0
    while [ $i -lt 16 ]; do
        for h in inh1 inh2; do
            qrsh -inherit -nostdin $h 'date +%s.%N' >> "$OUT.$wave.$h.$i" 2>&1 &
        done
        i=$((i+1))
    done
    wait
done
t1=$(date +%s.%N)
cat "$OUT".* | awk -v t0="$t0" -v t1="$t1" '
    /^[0-9]+\.[0-9]+$/ {n++; if ($1 > last) last = $1}
    !/^[0-9]+\.[0-9]+$/ {bad++; print "not a start: " $0 > "/dev/stderr"}
    END {printf "%d %.3f %.3f %d\n", n, last - t0, t1 - t0, bad}' > "$OUT.result"
EOF
chmod 755 "$D/job.sh"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: >"$D/last"; : >"$D/all"
run=1
while [ $run -le "$RUNS" ]; do
    out="$D/run$run"
    id=$(runuser -u gtbench -- env GANTRY_HOME="$GANTRY_HOME" "$BIN/qsub" -terse -pe inh 32 -v "OUT=$out" -o /dev/null -e "$D/err$run" "$D/job.sh")
    waited=0
    until [ -s "$out.result" ]; do
        sleep 0.1; waited=$((waited+1))
        if [ $waited -gt 600 ]; then
            echo "run $run (job $id): no result after 60 s" >&2
            "$BIN/qstat" -j "$id" >&2 || true
            exit 1
        fi
    done
    read -r n last all bad <"$out.result"
    if [ "$n" -ne 64 ] || [ "$bad" -ne 0 ]; then
        echo "run $run (job $id): $n tasks started of 64, $bad failed:" >&2
        cat "$D/err$run" >&2 || true
        exit 1
    fi
    echo "run $run: 64 tasks, last started after $last s, all 64 done after $all s"
    echo "$last" >>"$D/last"; echo "$all" >>"$D/all"
    until [ -z "$("$BIN/qstat" -u '*')" ]; do sleep 0.1; done
    run=$((run+1))
done
echo "64 qrsh -inherit starts of a 32-slot job on two hosts, $RUNS runs: last start median $(median <"$D/last") s, all 64 done median $(median <"$D/all") s"
