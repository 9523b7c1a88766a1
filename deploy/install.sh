#!/bin/sh
# Install Gantry on a host.
#
#   deploy/install.sh master [--hostname NAME] [--port PORT] [--no-start]
#       installs the binaries, creates the cell in /var/lib/gantry (gantry-master init)
#       and starts gantry-master under systemd. Prints the execd join command.
#   deploy/install.sh execd --master HOST:PORT --token-file FILE [--hostname NAME] [--no-start]
#       installs the binaries and joins this host to the master with the join token in
#       FILE (- reads it from standard input; never give it on a command line, where
#       every user of the host can read it): the token goes to /etc/default/gantry-execd
#       (mode 0600) as GANTRY_JOIN_TOKEN, the execd receives its host certificate on
#       first start, and the token is then removed from that file.
#
# Options for both: --bin DIR (where the built binaries are; default target/release),
# --prefix DIR (default /usr/local), --no-start (install only, do not touch systemd).
set -eu

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-1}"; }
[ $# -ge 1 ] || usage
ROLE=$1; shift
case "$ROLE" in master|execd) ;; -h|--help|help) usage 0 ;; *) usage ;; esac

SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN="$SRC/target/release"
PREFIX=/usr/local
START=yes
MASTER=
TOKEN=
TOKEN_FILE=
HOSTNAME_ARG=
PORT=6446
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) BIN=$2; shift 2 ;;
        --prefix) PREFIX=$2; shift 2 ;;
        --no-start) START=no; shift ;;
        --master) MASTER=$2; shift 2 ;;
        --token-file) TOKEN_FILE=$2; shift 2 ;;
        --token)
            echo "install.sh: --token puts the token on a command line; use --token-file FILE (or - for standard input)" >&2
            exit 1 ;;
        --hostname) HOSTNAME_ARG=$2; shift 2 ;;
        --port) PORT=$2; shift 2 ;;
        *) echo "install.sh: unknown option $1" >&2; usage ;;
    esac
done

[ "$(id -u)" = 0 ] || { echo "install.sh: run as root" >&2; exit 1; }
for b in gantry-master gantry-execd gantry-shepherd qhost qconf; do
    [ -x "$BIN/$b" ] || { echo "install.sh: $BIN/$b missing: build with deploy/build.sh" >&2; exit 1; }
done

install -d "$PREFIX/sbin" "$PREFIX/bin" "$PREFIX/share/doc/gantry"
install -m 0755 "$BIN/gantry-master" "$BIN/gantry-execd" "$BIN/gantry-shepherd" "$PREFIX/sbin/"
for b in "$BIN"/q*; do
    [ -x "$b" ] && [ -f "$b" ] && install -m 0755 "$b" "$PREFIX/bin/"
done
[ -x "$BIN/sge_share_mon" ] && install -m 0755 "$BIN/sge_share_mon" "$PREFIX/bin/"
install -m 0644 "$SRC/README.md" "$PREFIX/share/doc/gantry/"
# The man pages (from docs/man with the commands' own usage texts, by deploy/man.sh) and
# bash completion for the q* commands.
if command -v go-md2man >/dev/null 2>&1; then
    "$SRC/deploy/man.sh" "$BIN" "$PREFIX/share/man" >/dev/null
else
    echo "install.sh: go-md2man is missing: no man pages installed (Debian's go-md2man package)" >&2
fi
install -D -m 0644 "$SRC/deploy/completion/gantry.bash" /etc/bash_completion.d/gantry
# The documentation tree (docs/user, docs/admin, docs/dev), as it is in the repository.
(cd "$SRC" && find docs -type f -name '*.md') | while read -r f; do
    install -D -m 0644 "$SRC/$f" "$PREFIX/share/doc/gantry/$f"
done
HAVE_SYSTEMD=no
[ -d /run/systemd/system ] && HAVE_SYSTEMD=yes
if [ "$HAVE_SYSTEMD" = yes ] || [ -d /etc/systemd/system ]; then
    install -m 0644 "$SRC/deploy/systemd/gantry-$ROLE.service" /etc/systemd/system/
fi

case "$ROLE" in
master)
    if [ -e /var/lib/gantry/master.conf ]; then
        echo "install.sh: /var/lib/gantry already holds a cell; keeping it"
    else
        set -- --home /var/lib/gantry --port "$PORT"
        [ -n "$HOSTNAME_ARG" ] && set -- "$@" --hostname "$HOSTNAME_ARG"
        "$PREFIX/sbin/gantry-master" init "$@"
    fi
    ;;
execd)
    [ -n "$MASTER" ] || { echo "install.sh: execd needs --master HOST:PORT" >&2; exit 1; }
    HOME_DIR=/var/lib/gantry
    # On the master's own host the execd gets a home of its own inside the cell.
    [ -e /var/lib/gantry/master.conf ] && HOME_DIR=/var/lib/gantry/execd
    install -d -m 0755 "$HOME_DIR"
    if [ ! -e "$HOME_DIR/host.pem" ]; then
        [ -n "$TOKEN_FILE" ] || { echo "install.sh: execd needs --token-file FILE (or - for standard input)" >&2; exit 1; }
        if [ "$TOKEN_FILE" = - ]; then
            read -r TOKEN || true
        else
            TOKEN=$(cat "$TOKEN_FILE")
        fi
        [ -n "$TOKEN" ] || { echo "install.sh: no join token in $([ "$TOKEN_FILE" = - ] && echo 'standard input' || echo "$TOKEN_FILE")" >&2; exit 1; }
    fi
    # The file holds the token: readable by root only, also when it existed before
    # (a redirection into an existing file keeps that file's mode).
    umask 077
    touch /etc/default/gantry-execd
    chmod 0600 /etc/default/gantry-execd
    {
        echo "GANTRY_MASTER=$MASTER"
        echo "GANTRY_EXECD_HOME=$HOME_DIR"
        [ -n "$HOSTNAME_ARG" ] && echo "GANTRY_EXECD_HOSTNAME=$HOSTNAME_ARG"
        [ -e "$HOME_DIR/host.pem" ] || echo "GANTRY_JOIN_TOKEN=$TOKEN"
    } > /etc/default/gantry-execd
    ;;
esac

if [ "$START" = yes ] && [ "$HAVE_SYSTEMD" = yes ]; then
    systemctl daemon-reload
    systemctl enable --now "gantry-$ROLE.service"
    if [ "$ROLE" = execd ]; then
        # Once joined, the token is no longer needed on this host.
        for _ in $(seq 1 30); do
            [ -e "$HOME_DIR/host.pem" ] && break
            sleep 1
        done
        if [ -e "$HOME_DIR/host.pem" ]; then
            sed -i '/^GANTRY_JOIN_TOKEN=/d' /etc/default/gantry-execd
            echo "install.sh: joined; the token was removed from /etc/default/gantry-execd"
        else
            echo "install.sh: the execd has not joined yet: journalctl -u gantry-execd" >&2
        fi
    fi
    systemctl --no-pager status "gantry-$ROLE.service" | head -5 || true
elif [ "$START" = yes ]; then
    echo "install.sh: systemd is not running here; start the daemon yourself (see share/doc/gantry/docs/admin/install.md)" >&2
fi
