#!/bin/sh
# Build Gantry for use (release): every binary, then each client command and the
# shepherd, when they never call the name service, re-linked as static executables.
#
# Why: a job command is one short process, and most of a `qsub`'s time is spent starting
# it. A dynamically linked Rust program loads libgcc_s and libc and runs their start-up
# code (CPU feature probes, each a trap on a virtual machine) before main: on the
# two-core reference machine a static qsub submits 1,100 jobs per second where the
# dynamic one does 800 (see benches/RESULTS.md). glibc cannot load NSS modules into a
# static executable, so only commands that import no name-service function are linked
# statically; the check below reads each command's imports, so a command that starts
# using the name service stays dynamic (and `tests/tests/static_clients.rs` fails for the
# job commands, which must not). The same holds for gantry-shepherd, which the execd
# starts once per job task and hands the owner's account. The daemons stay dynamic.
#
# Usage: deploy/build.sh [cargo options, e.g. --locked]
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
cd "$SRC"
cargo build --release --workspace --bins "$@"
NSS='^(getpw|getgr|getspnam|initgroups|getaddrinfo|gethostby|getnameinfo|getserv|getnet|getproto|getlogin|dlopen)'
static=""
for src in client/src/bin/*.rs interactive/src/bin/*.rs execd/src/bin/gantry-shepherd.rs; do
    b=$(basename "$src" .rs)
    package=gantry-$(echo "$src" | cut -d/ -f1)
    if nm -D --undefined-only "target/release/$b" | awk '{print $2}' | grep -Eq "$NSS"; then
        echo "build.sh: $b uses the name service: left dynamically linked" >&2
        continue
    fi
    cargo rustc --quiet --release -p "$package" --bin "$b" "$@" -- -C target-feature=+crt-static
    static="$static $b"
done
echo "build.sh: linked statically:$static"
