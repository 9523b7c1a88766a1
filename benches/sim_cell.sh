# Sourced by the benchmarks that need it (scale.sh, clients.sh): a cell of its own in
# a temporary directory, its master (debug log of the cluster actor in $D/master.log),
# N simulated execution hosts (`gantry-execd simulate`) joined and reporting, and the
# queue sim.q of 4 slots per host with load_thresholds NONE. Sets BIN, D, PORT, MPID,
# SPID, Q, hz and the helpers now, as_user (the user gtbench, created if need be) and
# cpu (the master's CPU ticks); everything is stopped and removed on exit.
# Needs N and BIN (the release binaries, deploy/build.sh).
[ -x "$BIN/gantry-master" ] || { echo "build first: deploy/build.sh" >&2; exit 1; }
id gtbench >/dev/null 2>&1 || useradd -m -s /bin/sh gtbench
D=$(mktemp -d); chmod 755 "$D"
PORT=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("",0)); print(s.getsockname()[1])')
"$BIN/gantry-master" init --home "$D/cell" --hostname bench --port "$PORT" >/dev/null
GANTRY_LOG="info,gantry_master::shell::cluster=debug" "$BIN/gantry-master" run --home "$D/cell" 2>"$D/master.log" & MPID=$!
SPID=
trap 'kill $SPID $MPID 2>/dev/null || true; wait 2>/dev/null; rm -rf "$D"' EXIT
export GANTRY_HOME="$D/cell"
Q="$BIN/qconf"
until "$Q" -sm >/dev/null 2>&1; do sleep 0.05; done
# Every task of an array may run at once (SGE's experiments set the same).
printf 'max_aj_instances 0\n' > "$D/global"; "$Q" -Mconf "$D/global" >/dev/null 2>&1
now() { date +%s.%N; }
as_user() { runuser -u gtbench -- "$@"; }
cpu() { awk '{print $14 + $15}' "/proc/$MPID/stat"; }
hz=$(getconf CLK_TCK)

t0=$(now)
"$BIN/gantry-execd" simulate --home "$D/sim" --hosts "$N" --master "127.0.0.1:$PORT" \
    --token-file "$D/cell/join-token" 2>"$D/sim.log" & SPID=$!
joined() { "$BIN/qhost" 2>/dev/null | grep -cE '^sim[0-9]+ +lx-amd64 +4 ' || true; }
deadline=$(($(date +%s) + 300))
until [ "$(joined)" -ge "$N" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || {
        keep=$(mktemp -d /tmp/sim-cell-failed.XXXXXX)
        cp "$D/sim.log" "$D/master.log" "$keep/"
        echo "only $(joined) of $N simulated hosts joined in 300 s; the logs are kept in $keep" >&2
        exit 1
    }
    sleep 0.5
done
t1=$(now)
echo "$N simulated hosts joined and reporting in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f s", b-a}'); master RSS $(awk '/^VmRSS:/ {printf "%.0f MiB", $2/1024}' /proc/$MPID/status)"

"$Q" -sq all.q | sed -e 's/^qname .*/qname sim.q/' -e 's/^slots .*/slots 4/' \
    -e 's/^load_thresholds .*/load_thresholds NONE/' > "$D/sim.q"
"$Q" -Aq "$D/sim.q" >/dev/null 2>&1
