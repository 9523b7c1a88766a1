#!/bin/sh
# Build Gantry and bring up a one-host cluster (master + execd on this host) in
# ./demo, show qhost, submit a job and show its output. Run it again to reuse the same
# cell; "stop" stops it.
#
#   deploy/quickstart.sh          build, start, show qhost, run a job
#   deploy/quickstart.sh stop     stop the daemons (the cell stays in ./demo)
#
# Environment: GANTRY_DEMO_DIR (default ./demo), GANTRY_PORT (default 6446).
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
DIR=${GANTRY_DEMO_DIR:-$PWD/demo}
PORT=${GANTRY_PORT:-6446}
BIN="$SRC/target/release"

stop() {
    for d in execd master; do
        if [ -f "$DIR/$d.pid" ]; then
            pid=$(cat "$DIR/$d.pid")
            kill "$pid" 2>/dev/null || true
            i=0
            while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
            rm -f "$DIR/$d.pid"
        fi
    done
}
running() { [ -f "$DIR/$1.pid" ] && kill -0 "$(cat "$DIR/$1.pid")" 2>/dev/null; }

if [ "${1:-}" = stop ]; then stop; echo "stopped (the cell is kept in $DIR)"; exit 0; fi

echo "== building Gantry (release, with deploy/build.sh: the job commands and the shepherd linked statically)"
"$SRC/deploy/build.sh"
mkdir -p "$DIR"
HOST=$(hostname -s 2>/dev/null || hostname)
if [ ! -e "$DIR/cell/master.conf" ]; then
    echo "== creating the cell in $DIR/cell: a cluster CA, the master's certificate, a join token"
    echo "   for execution hosts ($DIR/cell/join-token), the spool with SGE's default configuration"
    # What init prints is for a production install (/var/lib/gantry): kept aside here.
    "$BIN/gantry-master" init --home "$DIR/cell" --hostname "$HOST" --port "$PORT" >"$DIR/init.txt"
    NEW_CELL=yes
fi
if ! running master; then
    echo "== starting gantry-master (log: $DIR/master.log; clients on $DIR/cell/gantry.sock, execds on UDP port $PORT)"
    "$BIN/gantry-master" run --home "$DIR/cell" </dev/null >>"$DIR/master.log" 2>&1 &
    echo $! > "$DIR/master.pid"
fi
export GANTRY_HOME="$DIR/cell"
i=0
until "$BIN/qconf" -sm >/dev/null 2>&1; do
    i=$((i+1)); [ $i -lt 100 ] || { echo "the master did not start; see $DIR/master.log" >&2; exit 1; }
    sleep 0.1
done
if [ "${NEW_CELL:-no}" = yes ] && [ "$(id -u)" = 0 ]; then
    # Like SGE, a cell refuses jobs of users below min_uid (1000). This demo cell is run
    # by root, so it lets root's jobs in; a real installation keeps the default.
    printf 'min_uid 0\nmin_gid 0\n' > "$DIR/global"
    echo "== letting root's jobs into this demo cell (min_uid 0; a real cell keeps SGE's 1000)"
    "$BIN/qconf" -Mconf "$DIR/global"
fi
if ! running execd; then
    TOKEN_ARG=
    [ -e "$DIR/execd/host.pem" ] || TOKEN_ARG="--token-file $DIR/cell/join-token"
    echo "== starting gantry-execd on this host (log: $DIR/execd.log), joining with the cell's token:"
    echo "   gantry-execd run --home $DIR/execd --master 127.0.0.1:$PORT --hostname $HOST $TOKEN_ARG"
    # shellcheck disable=SC2086
    "$BIN/gantry-execd" run --home "$DIR/execd" --master "127.0.0.1:$PORT" --hostname "$HOST" $TOKEN_ARG </dev/null >>"$DIR/execd.log" 2>&1 &
    echo $! > "$DIR/execd.pid"
fi
echo "== waiting for the execd's first load report"
i=0
until "$BIN/qhost" | grep -q "^$HOST .* [0-9]*\.[0-9][0-9] "; do
    i=$((i+1)); [ $i -lt 300 ] || { echo "the execd did not report; see $DIR/execd.log" >&2; exit 1; }
    sleep 0.1
done
echo "== qhost"
"$BIN/qhost"
echo "== qsub -cwd -sync y hello.sh (a job script with #\$ directives; qsub waits for its end)"
cat > "$DIR/hello.sh" <<'JOB'
#!/bin/sh
#$ -N hello
#$ -j y
echo "hello from job $JOB_ID ($JOB_NAME) on $HOSTNAME in queue $QUEUE, running as $(id -un)"
JOB
(cd "$DIR" && "$BIN/qsub" -cwd -sync y hello.sh) >"$DIR/qsub.out" 2>&1 &
QSUB=$!
# A job that waits more than a few seconds says why (on a host still busy from the
# build, the load threshold np_load_avg of all.q holds it back until the load falls).
i=0
while kill -0 "$QSUB" 2>/dev/null; do
    i=$((i+1))
    if [ $i -eq 50 ] || [ $((i % 300)) -eq 0 ]; then
        id=$("$BIN/qstat" | awk '$3 == "hello" {print $1}' | tail -1)
        if [ -n "$id" ]; then
            echo "   job $id still waits after $((i / 10)) s; the scheduler says (qstat -j $id):"
            "$BIN/qstat" -j "$id" 2>/dev/null | sed -n '/^scheduling info:/,$p' | sed 's/^/   /'
        fi
    fi
    sleep 0.1
done
wait "$QSUB" || { cat "$DIR/qsub.out"; echo "qsub failed" >&2; exit 1; }
out=$(cat "$DIR/qsub.out")
echo "$out"
id=$(echo "$out" | sed -n 's/^Your job \([0-9]*\) .*/\1/p')
echo "== $DIR/hello.o$id"
cat "$DIR/hello.o$id"
cat <<MSG

A one-host Gantry cluster is running (logs: $DIR/master.log, $DIR/execd.log).
Use it with:   export GANTRY_HOME=$DIR/cell PATH=$BIN:\$PATH
               qsub -b y sleep 10; qstat; qacct -j hello; qhost -F
Stop it with:  $0 stop
MSG
