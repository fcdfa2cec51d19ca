#!/usr/bin/env bash
# bench/rls.sh: Envoy's rate limit service, rlserver against
# envoyproxy/ratelimit + Redis 7, side by side on this machine, in one run.
#
# The same gRPC load (bench/rlsload) drives both: one hot descriptor, then
# descriptor values drawn from 100,000 distinct ones, each ROUNDS times,
# the two sides alternating. For each run it reports decisions per second,
# p50/p99 latency, and the CPU seconds spent by every process of the side
# (rlserver alone; ratelimit plus redis-server), read from /proc before
# and after, so decisions per CPU-second compare whole deployments. Then
# the exactness check: 200 concurrent clients on a limit of 1,000 a
# minute, and what each side admits.
#
# rlserver runs in its default, persisted configuration (a temporary
# --dir). envoyproxy/ratelimit is built from its Go source at RATELIMIT_REF
# (go install through the module proxy, or RATELIMIT_SRC, a checkout) and
# runs against redis-server (Debian's redis-server package, 7.x) with
# persistence off, as its documentation deploys it.
#
# Usage: bench/rls.sh
# Environment:
#   ROUNDS=n           alternating rounds per workload (default 3)
#   REQUESTS=n         requests per run (default 200000)
#   CLIENTS=n          concurrent clients (default 50)
#   RATELIMIT_REF=v    envoyproxy/ratelimit version (default a pinned commit)
#   RATELIMIT_SRC=dir  build it from this checkout instead
#   RATELIMIT_BIN=path use this binary instead of building one
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-200000}
CLIENTS=${CLIENTS:-50}
RATELIMIT_REF=${RATELIMIT_REF:-f2fb15770f7fd1c88ca6c3a1b58ee513917ace96}
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu() { # CPU seconds (user + system) of the given pids
	local t=0 p
	for p in "$@"; do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	echo "scale=3; $t / $(getconf CLK_TCK)" | bc
}
waitport() {
	for _ in $(seq 200); do
		(echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	echo "nothing listens on port $1" >&2
	exit 1
}

echo "== building"
go build -o "$work/rlserver" ./cmd/rlserver
go build -o "$work/rlsload" ./bench/rlsload
if [[ -n ${RATELIMIT_BIN:-} ]]; then
	cp "$RATELIMIT_BIN" "$work/ratelimit"
elif [[ -n ${RATELIMIT_SRC:-} ]]; then
	(cd "$RATELIMIT_SRC" && go build -o "$work/ratelimit" ./src/service_cmd)
else
	GOBIN=$work GOFLAGS=-mod=mod go install "github.com/envoyproxy/ratelimit/src/service_cmd@$RATELIMIT_REF"
	mv "$work/service_cmd" "$work/ratelimit"
fi
command -v redis-server >/dev/null || { echo "redis-server missing: apt-get install redis-server" >&2; exit 1; }

# Both sides read the same configuration.
mkdir -p "$work/config/config"
cat >"$work/config/config/bench.yaml" <<'YAML'
domain: bench
descriptors:
  - key: user
    rate_limit:
      unit: second
      requests_per_unit: 1000000
  - key: exact
    rate_limit:
      unit: minute
      requests_per_unit: 1000
YAML

echo "== starting"
rl_grpc=$(freeport)
"$work/rlserver" --port "$(freeport)" --dir "$work/rlserver-data" \
	--rls-addr "127.0.0.1:$rl_grpc" --rls-config "$work/config/config/bench.yaml" 2>"$work/rlserver.log" &
rl_pid=$!
pids+=("$rl_pid")
redis_port=$(freeport)
redis-server --port "$redis_port" --save '' --appendonly no --daemonize no >"$work/redis.log" 2>&1 &
redis_pid=$!
pids+=("$redis_pid")
ref_grpc=$(freeport)
waitport "$redis_port"
env USE_STATSD=false LOG_LEVEL=warn REDIS_SOCKET_TYPE=tcp REDIS_URL="127.0.0.1:$redis_port" \
	RUNTIME_ROOT="$work/config" RUNTIME_SUBDIRECTORY=. RUNTIME_APPDIRECTORY=config RUNTIME_WATCH_ROOT=false \
	GRPC_HOST=127.0.0.1 GRPC_PORT="$ref_grpc" PORT="$(freeport)" DEBUG_PORT="$(freeport)" \
	"$work/ratelimit" >"$work/ratelimit.log" 2>&1 &
ref_pid=$!
pids+=("$ref_pid")
waitport "$rl_grpc"
waitport "$ref_grpc"

run() { # side addr pids... -- load args...
	local side=$1 addr=$2
	shift 2
	local procs=()
	while [[ $1 != -- ]]; do procs+=("$1"); shift; done
	shift
	local before after out
	before=$(cpu "${procs[@]}")
	out=$("$work/rlsload" -addr "$addr" -domain bench "$@")
	after=$(cpu "${procs[@]}")
	local n cpus
	n=$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$out")
	cpus=$(echo "$after - $before" | bc)
	printf '%-10s %s cpu_s=%s decisions_per_cpu_s=%s\n' "$side" "$out" "$cpus" "$(echo "scale=0; $n / $cpus" | bc)"
}

for mode in hot distinct; do
	args=(-clients "$CLIENTS" -requests "$REQUESTS" -key user)
	[[ $mode == distinct ]] && args+=(-distinct 100000)
	echo "== $mode (${ROUNDS} rounds, ${REQUESTS} requests, ${CLIENTS} clients)"
	for r in $(seq "$ROUNDS"); do
		run rlserver "127.0.0.1:$rl_grpc" "$rl_pid" -- "${args[@]}"
		run reference "127.0.0.1:$ref_grpc" "$ref_pid" "$redis_pid" -- "${args[@]}"
	done
done

echo "== exactness: 200 clients, 2000 requests on a limit of 1000 a minute"
# Start early in a minute so that the run stays inside one window.
while (($(date +%S | sed 's/^0//') > 40)); do sleep 1; done
run rlserver "127.0.0.1:$rl_grpc" "$rl_pid" -- -clients 200 -requests 2000 -key exact
run reference "127.0.0.1:$ref_grpc" "$ref_pid" "$redis_pid" -- -clients 200 -requests 2000 -key exact
echo "(ok= is what each side admitted; exact is ok=1000)"
