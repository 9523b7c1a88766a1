#!/bin/sh
# Another user's qstat while one user holds thousands of connections to the master's
# client socket (issue 34, item 2): the master's door lets each user in up to its
# share and closes idle connections after 10 s, so the attacker below re-opens all of
# its connections every 5 s. Times `qstat -u '*'` of a second ordinary user (each run
# a process started with runuser, as a user types it) with farm-bench, first on the
# quiet master, then under the attack, and prints both reports (quote the medians).
# Usage: benches/door.sh [RUNS=30] [CONNECTIONS=20000]
# As root, after deploy/build.sh (release binaries); the users gtbench and gtbench2 are
# created if need be.
set -eu
RUNS=${1:-30}
CONNECTIONS=${2:-20000}
BIN=$(cd "$(dirname "$0")/.." && pwd)/target/release
[ -x "$BIN/gantry-master" ] || { echo "build first: deploy/build.sh" >&2; exit 1; }
for u in gtbench gtbench2; do id "$u" >/dev/null 2>&1 || useradd -m -s /bin/sh "$u"; done
D=$(mktemp -d); chmod 755 "$D"
PORT=$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("",0)); print(s.getsockname()[1])')
"$BIN/gantry-master" init --home "$D/cell" --hostname bench --port "$PORT" >/dev/null
"$BIN/gantry-master" run --home "$D/cell" 2>"$D/master.log" & MPID=$!
APID=
trap 'kill $APID $MPID 2>/dev/null || true; wait 2>/dev/null; rm -rf "$D"' EXIT
until GANTRY_HOME="$D/cell" "$BIN/qconf" -sm >/dev/null 2>&1; do sleep 0.05; done
# One command line, split into words by the shell and never globbed (its `*` is qstat's).
set -f
victim="runuser -u gtbench -- env GANTRY_HOME=$D/cell $BIN/qstat -u *"

echo "== quiet master"
farm-bench -n "$RUNS" --timeout 600 -- $victim

# The attacker: as many connections as it may open (its hard limit), all re-opened
# every 5 s, none ever sending a byte.
runuser -u gtbench2 -- sh -c 'ulimit -n "$(ulimit -Hn)"; exec perl -e "$0" "$1" "$2"' '
use IO::Socket::UNIX;
my ($path, $count) = @ARGV;
$| = 1;
while (1) {
    my @held;
    for (1 .. $count) {
        my $s = IO::Socket::UNIX->new(Peer => $path, Type => SOCK_STREAM) or last;
        push @held, $s;
    }
    print STDERR "attacker holds ", scalar(@held), " connections\n";
    sleep 5;
}' "$D/cell/gantry.sock" "$CONNECTIONS" 2>"$D/attacker.log" & APID=$!
until grep -q "attacker holds" "$D/attacker.log" 2>/dev/null; do sleep 0.1; done
echo "== under attack: $(tail -1 "$D/attacker.log")"
farm-bench -n "$RUNS" --timeout 600 -- $victim
echo "master RSS under attack: $(awk '/^VmRSS:/ {printf "%.0f MiB", $2/1024}' "/proc/$MPID/status")"
grep -m1 "refused at the door" "$D/master.log" || echo "(no refusal logged)"
