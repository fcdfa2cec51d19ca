#!/usr/bin/env bash
# Installs what the test suite needs beyond Go, idempotently, from Debian's
# packages (apt-get):
# - gcc, for the race detector (go test -race needs cgo);
# - redis-cli (redis-tools) for the redis-cli integration tests, and
#   redis-server for the reference Redis Cluster the cluster tests compare
#   against;
# - the cluster clients in other languages that integration/clients/ drives:
#   redis-py for /usr/bin/python3 (python3-redis), PHP's CLI with phpredis
#   (php-cli, php-redis; phpunit, php-symfony-rate-limiter, php-psr,
#   php-nyholm-psr7, php-symfony-yaml and php-apcu for sdk/php;
#   default-jdk-headless, junit5 and libservlet-api-java for sdk/java),
#   and Node.js with npm, then ioredis from
#   integration/clients/node's lockfile, and express-rate-limit with
#   rate-limit-redis from integration/testdata/node-express's;
# - etcd (etcd-server), which the etcd-run cluster tests start, and etcdctl
#   (etcd-client), which the compose test's etcd image holds;
# - Docker (docker.io) for the container test, docker-compose and PyYAML
#   (python3-yaml) for the deploy/ checks; it starts dockerd when no daemon
#   answers;
# - then, from the Go module proxy, redis_exporter for the test that has it
#   scrape rlserver (scripts/redis-exporter.sh, into .cache/);
# - and Debian's Symfony Cache (php-symfony-cache, for its RedisAdapter, with
#   the packages its autoloader requires) for the test that runs Symfony's
#   RateLimiter on it: downloaded (apt-get download) and unpacked (dpkg -x)
#   into .cache/symfony-cache/, never installed, since installing it would
#   remove php-psr, which the PHP SDK's tests need (a dependency,
#   php-symfony-service-contracts, Breaks php-psr: its Psr\Container
#   implementations do not fit the extension's interfaces; the RedisAdapter
#   does not use them). With the extension loaded the unpacked Psr\Cache
#   and Psr\Container files are never read: the extension declares those
#   interfaces, and the autoloaders only look for undeclared ones. Kept when
#   its autoload.php is already there.
# - Laravel 8.83's Redis component (php-illuminate-redis, from Debian's
#   php-laravel-framework source, with the packages its autoloader
#   requires) for the test that runs its DurationLimiter and
#   ConcurrencyLimiter: unpacked the same way into .cache/laravel-redis/,
#   never installed, since installing php-laravel-framework would remove
#   php-psr too.
# As root it installs what is missing (apt-get update only then); otherwise
# through sudo when sudo needs no password, else it lists what is missing
# with the command that installs it and exits 1. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
trap 'echo "setup: failed (line $LINENO: $BASH_COMMAND)" >&2' ERR

need=()
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || need+=(etcd-client)
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || need+=(python3-redis)
/usr/bin/python3 -c 'import yaml' >/dev/null 2>&1 || need+=(python3-yaml)
if ! command -v php >/dev/null 2>&1; then
  need+=(php-cli php-redis)
elif ! php -m 2>/dev/null | grep -x redis >/dev/null; then
  # (Not grep -q: it would stop reading, and php's SIGPIPE fail the pipe.)
  need+=(php-redis)
fi
# The PHP SDK's tests (sdk/php) run with Debian's phpunit, its Symfony
# RateLimiter adapter's against Debian's php-symfony-rate-limiter, its PSR-15
# middleware's with the PSR interfaces of the php-psr extension and Nyholm's
# PSR-7 messages.
command -v phpunit >/dev/null 2>&1 || need+=(phpunit)
[ -f /usr/share/php/Symfony/Component/RateLimiter/autoload.php ] || need+=(php-symfony-rate-limiter)
php -m 2>/dev/null | grep -x psr >/dev/null || need+=(php-psr)
[ -f /usr/share/php/Nyholm/Psr7/autoload.php ] || need+=(php-nyholm-psr7)
# symfony/yaml, for the test of the PHP README's services.yaml.
[ -f /usr/share/php/Symfony/Component/Yaml/autoload.php ] || need+=(php-symfony-yaml)
# APCu, for the PHP SDK's FailureMode::Local test (shared across requests of php -S).
php -m 2>/dev/null | grep -x apcu >/dev/null || need+=(php-apcu)
# The Java SDK (sdk/java) builds with javac and tests with junit5's console launcher.
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
[ -f /usr/share/java/junit-platform-console-standalone.jar ] || need+=(junit5)
# Its Servlet filter compiles against the Servlet 4.0 API.
[ -f /usr/share/java/servlet-api.jar ] || need+=(libservlet-api-java)
# The Python SDK (sdk/python) tests with Debian's pytest, limits,
# Flask-Limiter (with Flask), Starlette and httpx.
for m in pytest:python3-pytest limits:python3-limits flask_limiter:python3-flask-limiter \
         starlette:python3-starlette httpx:python3-httpx; do
  /usr/bin/python3 -c "import ${m%%:*}" >/dev/null 2>&1 || need+=("${m#*:}")
done
# Node.js may come from elsewhere than Debian (with its own npm): Debian's
# packages are taken only when there is no node at all.
command -v node >/dev/null 2>&1 || need+=(nodejs npm)
# A Docker daemon already reachable (Docker Desktop, a remote DOCKER_HOST)
# needs no dockerd here; the docker client may come from elsewhere too.
if ! docker info >/dev/null 2>&1 && ! command -v dockerd >/dev/null 2>&1; then
  need+=(docker.io)
fi
command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1 || need+=(docker-compose)
if [ "${1:-}" = "--bench" ]; then
  command -v redis-benchmark >/dev/null 2>&1 || need+=(redis-tools)
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
    sudo="sudo -n"
  else
    sudo="none"
  fi
fi

if [ ${#need[@]} -gt 0 ]; then
  # One list, without repeats, for one apt-get install.
  mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
  if [ "$sudo" = "none" ]; then
    echo "setup: the tests need Debian packages that are not installed: ${need[*]}" >&2
    echo "setup: install them as root, then run this again:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${need[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  log=$(mktemp)
  if ! { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"; } >"$log" 2>&1; then
    echo "setup: apt-get failed to install ${need[*]}:" >&2
    tail -n 30 "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
fi

# A Docker daemon for the container test: started here when none answers
# (CI and these machines have no init system that would start it).
if ! docker info >/dev/null 2>&1; then
  if [ "$sudo" = "none" ]; then
    echo "setup: no Docker daemon answers and dockerd needs root: start it (sudo systemctl start docker, or sudo dockerd &) or the container test fails" >&2
  else
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
      $sudo systemctl start docker || true
    fi
    if ! docker info >/dev/null 2>&1; then
      dockerd_log=${TMPDIR:-/tmp}/rlserver-dockerd.log
      echo "setup: starting dockerd (log: $dockerd_log)" >&2
      $sudo nohup dockerd >"$dockerd_log" 2>&1 </dev/null &
    fi
    for _ in $(seq 1 60); do
      docker info >/dev/null 2>&1 && break
      sleep 0.5
    done
    if ! docker info >/dev/null 2>&1; then
      echo "setup: dockerd did not come up in 30 s; the container test will fail. Its log:" >&2
      tail -n 20 "${dockerd_log:-/dev/null}" >&2 || true
    fi
  fi
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

# The Node.js SDK's (sdk/node) TypeScript, ioredis, express, fastify and
# the two rate-limit libraries its stores plug into, from its lockfile.
node_sdk=sdk/node
if [ ! -d "$node_sdk/node_modules" ]; then
  echo "setup: installing $node_sdk's npm packages" >&2
  (cd "$node_sdk" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

# express-rate-limit, rate-limit-redis, ioredis and express for
# integration/node_express_test.go, at its lockfile's pinned versions.
node_express=integration/testdata/node-express
if [ ! -d "$node_express/node_modules" ]; then
  echo "setup: installing $node_express's npm packages" >&2
  (cd "$node_express" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi

# redis_exporter, built from the Go module proxy, for the test that has it
# scrape rlserver.
./scripts/redis-exporter.sh

# Symfony Cache 5.4 for integration/symfony_test.go, unpacked, not installed
# (see the top). Its Debian autoloaders require each other by
# __DIR__-relative paths, so the whole set is unpacked side by side, as
# under /usr/share/php: .cache/symfony-cache/Symfony/Component/Cache/autoload.php.
# unpack_debs DIR PACKAGE...: downloads the Debian packages (not
# installing them) and unpacks their /usr/share/php into DIR.
unpack_debs() {
  local dir=$1 stage deb
  shift
  echo "setup: unpacking $* into $dir" >&2
  mkdir -p .cache
  stage=$(mktemp -d "$dir.XXXXXX")
  mkdir "$stage/debs"
  if ! (cd "$stage/debs" && apt-get download -qq "$@") >"$stage/log" 2>&1; then
    # The package lists may be missing (a fresh image) or stale.
    if [ "$sudo" != "none" ]; then
      $sudo apt-get update -qq >/dev/null 2>&1 || true
    fi
    if ! (cd "$stage/debs" && apt-get download -qq "$@") >"$stage/log" 2>&1; then
      echo "setup: apt-get download $* failed:" >&2
      tail -n 20 "$stage/log" >&2
      rm -rf "$stage"
      exit 1
    fi
  fi
  for deb in "$stage"/debs/*.deb; do
    dpkg -x "$deb" "$stage/root"
  done
  rm -rf "$dir"
  mv "$stage/root/usr/share/php" "$dir"
  rm -rf "$stage"
}

symfony_cache=.cache/symfony-cache
if [ ! -f "$symfony_cache/Symfony/Component/Cache/autoload.php" ]; then
  unpack_debs "$symfony_cache" php-symfony-cache php-symfony-cache-contracts php-symfony-service-contracts \
    php-symfony-var-exporter php-symfony-deprecation-contracts php-psr-cache php-psr-container php-psr-log
fi

# Laravel's Redis component for integration/laravel_test.go, unpacked, not
# installed (see the top). Its Debian autoloaders require each other by
# include_path-relative paths: the test puts .cache/laravel-redis first on
# PHP's include_path.
laravel_redis=.cache/laravel-redis
if [ ! -f "$laravel_redis/Illuminate/Redis/autoload.php" ]; then
  unpack_debs "$laravel_redis" php-illuminate-redis php-illuminate-support php-illuminate-collections \
    php-illuminate-contracts php-illuminate-macroable php-nesbot-carbon php-doctrine-inflector \
    php-voku-portable-ascii php-symfony-translation php-symfony-translation-contracts \
    php-symfony-deprecation-contracts php-psr-container php-psr-simple-cache
fi
