#!/bin/sh
# The man pages, from the one source the project keeps: docs/man/NAME.SECTION.md (the
# page's words), its @USAGE@ replaced by the usage the command itself prints (`-help`
# for the q* commands, `--help` and each subcommand's for the daemons), turned into
# roff by go-md2man (Debian's go-md2man package).
# Usage: deploy/man.sh [BIN=target/release] [OUT=target/man]
# Writes OUT/man1/*.1 and OUT/man8/*.8.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$SRC/target/release}
OUT=${2:-$SRC/target/man}
command -v go-md2man >/dev/null 2>&1 || { echo "man.sh: go-md2man is missing (Debian's go-md2man package)" >&2; exit 1; }
mkdir -p "$OUT/man1" "$OUT/man8"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$SRC/Cargo.toml" | head -1)
for md in "$SRC"/docs/man/*.md; do
    page=$(basename "$md" .md)
    name=${page%.*}; section=${page##*.}
    [ -x "$BIN/$name" ] || { echo "man.sh: $BIN/$name missing: build first" >&2; exit 1; }
    case $section in
        1) "$BIN/$name" -help > "$tmp/usage" 2>&1 || true ;;
        *) "$BIN/$name" --help > "$tmp/usage"
           for sub in $("$BIN/$name" --help | awk '/^Commands:/ {f=1; next} /^$/ {f=0} f && $1 != "help" {print $1}'); do
               printf '\n%s %s:\n\n' "$name" "$sub" >> "$tmp/usage"
               "$BIN/$name" "$sub" --help | sed '/^$/N;/^\n$/D' >> "$tmp/usage"
           done ;;
    esac
    # The usage as a literal block (four spaces: go-md2man keeps it as written).
    sed 's/^/    /' "$tmp/usage" > "$tmp/block"
    awk -v block="$tmp/block" -v version="$version" '$0 == "@USAGE@" {while ((getline l < block) > 0) print l; next} {gsub(/@VERSION@/, version); print}' "$md" > "$tmp/$page.md"
    go-md2man -in "$tmp/$page.md" -out "$OUT/man$section/$page"
done
echo "man pages in $OUT"
