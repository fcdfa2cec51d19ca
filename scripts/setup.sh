#!/usr/bin/env bash
# Installs what the test suite needs beyond Go, idempotently:
# redis-cli (Debian's redis-tools) for the redis-cli integration tests.
# Run as root or with sudo available. Safe to run again: it installs only
# what is missing.
set -euo pipefail

need=()
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
if [ "${1:-}" = "--bench" ]; then
  command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
  command -v redis-benchmark >/dev/null 2>&1 || need+=(redis-tools)
fi
[ ${#need[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "setup: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
