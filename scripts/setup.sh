#!/usr/bin/env bash
# Installs what the test suite needs beyond Go, idempotently:
# - redis-cli (Debian's redis-tools) for the redis-cli integration tests;
# - redis-server, for the reference Redis Cluster the cluster tests compare
#   against;
# - the cluster clients in other languages that integration/clients/ drives:
#   redis-py for /usr/bin/python3 (Debian's python3-redis), PHP's CLI with
#   phpredis (php-cli, php-redis), and Node.js with npm, then ioredis from
#   integration/clients/node's lockfile;
# - etcd (Debian's etcd-server), which the etcd-run cluster tests start.
# Run as root or with sudo available. Safe to run again: it installs only
# what is missing, and runs apt-get update only when something is.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || need+=(python3-redis)
if ! command -v php >/dev/null 2>&1; then
  need+=(php-cli php-redis)
elif ! php -m 2>/dev/null | grep -x redis >/dev/null; then
  # (Not grep -q: it would stop reading, and php's SIGPIPE fail the pipe.)
  need+=(php-redis)
fi
# Node.js may come from elsewhere than Debian (with its own npm): Debian's
# packages are taken only when there is no node at all.
command -v node >/dev/null 2>&1 || need+=(nodejs npm)
if [ "${1:-}" = "--bench" ]; then
  command -v redis-benchmark >/dev/null 2>&1 || need+=(redis-tools)
fi

if [ ${#need[@]} -gt 0 ]; then
  # One list, without repeats, for one apt-get install.
  mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# ioredis for integration/clients/node/cluster.js, at the lockfile's version.
node_dir=integration/clients/node
if [ ! -d "$node_dir/node_modules" ]; then
  echo "setup: installing $node_dir's npm packages" >&2
  if [ -f "$node_dir/package-lock.json" ]; then
    (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  else
    (cd "$node_dir" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  fi
fi
