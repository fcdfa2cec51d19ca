#!/usr/bin/env bash
# Builds Prometheus's redis_exporter (github.com/oliver006/redis_exporter)
# at a fixed version from the Go module proxy into .cache/redis_exporter/,
# for the integration test that has it scrape rlserver. Idempotent: an
# existing build is kept.
#
# `go install ...@v1.62.0` is refused here (the checksum database has no
# entry the proxy serves), so the module is downloaded with the checksum
# database skipped for it alone, its hash checked against the one pinned
# below, and built in its directory with its own go.sum.
set -euo pipefail
cd "$(dirname "$0")/.."

module=github.com/oliver006/redis_exporter
version=v1.62.0
# go.sum's h1: hash of the module's files, pinned when it was first taken.
want_sum="h1:7T0Fh8fJeYxf9gWa5gI6IliOSOWY9F5WlJCQMjZcjVE="
out=.cache/redis_exporter/redis_exporter-$version

if [ -x "$out" ]; then
  exit 0
fi
echo "setup: building $module@$version into $out" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Outside any module, so that nothing here touches rlserver's go.mod.
json=$(cd "$tmp" && GOFLAGS=-mod=mod GONOSUMDB=$module go mod download -json "$module@$version") || {
  echo "setup: go mod download $module@$version failed:" >&2
  echo "$json" >&2
  exit 1
}
field() { printf '%s\n' "$json" | sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" | head -n 1; }
sum=$(field Sum)
dir=$(field Dir)
if [ "$sum" != "$want_sum" ]; then
  echo "setup: $module@$version has hash $sum, want $want_sum: refusing to build it" >&2
  exit 1
fi
mkdir -p "$(dirname "$out")"
abs=$(pwd)/$out
(cd "$dir" && GOFLAGS=-buildvcs=false go build -o "$abs.tmp" .)
mv "$abs.tmp" "$abs"
