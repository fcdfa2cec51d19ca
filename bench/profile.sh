#!/usr/bin/env bash
# bench/profile.sh: CPU profile of rlserver under the P16 workload.
#
# Builds rlserver, starts it with --cpuprofile on a free loopback port
# (--dir '', in memory), drives it with redis-benchmark (50 clients,
# pipeline 16) with CL.THROTTLE and CL.TOKENBUCKET on a hot key and on
# 100,000 random keys, stops it with SIGTERM so that the profile is written,
# and prints `go tool pprof -top` (flat and cumulative).
#
# Usage: bench/profile.sh [OUT_DIR]   (default /tmp/rlserver-profile)
# Environment: N=requests per workload (default 1000000), GOMAXPROCS passes
# through to rlserver. The perf alternative, which also shows the kernel side:
#   perf record -F 1999 -g -p <rlserver pid> -- sleep 6; perf report --children
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/rlserver-profile}
N=${N:-1000000}
mkdir -p "$OUT"
command -v redis-benchmark >/dev/null || {
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq redis-tools >/dev/null
}
go build -o "$OUT/rlserver" ./cmd/rlserver

LOW=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
for _ in $(seq 100); do
	PORT=$((10000 + RANDOM % (LOW - 10000)))
	(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || break
done
"$OUT/rlserver" --bind 127.0.0.1 --port "$PORT" --dir '' --cpuprofile "$OUT/cpu.prof" >"$OUT/rlserver.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	[[ $(redis-cli -h 127.0.0.1 -p "$PORT" PING 2>/dev/null) == PONG ]] && break
	sleep 0.1
done

run() {
	redis-benchmark -h 127.0.0.1 -p "$PORT" -c 50 -P 16 -n "$N" --csv "$@" 2>/dev/null | tail -1 |
		awk -F'","' '{gsub(/"/, "", $1); printf "%-70s %10.0f ops/s  p99 %s ms\n", $1, $2, $7}'
}
run CL.THROTTLE th:hot 1000000 1000000 1
run -r 100000 CL.THROTTLE 'th:__rand_int__' 1000000 1000000 1
run CL.TOKENBUCKET tb:hot 1000000 1000000 1
run -r 100000 CL.TOKENBUCKET 'tb:__rand_int__' 1000000 1000000 1

kill -TERM "$PID"
wait "$PID" || true
trap - EXIT
go tool pprof -top -nodecount 40 "$OUT/rlserver" "$OUT/cpu.prof" 2>/dev/null | tee "$OUT/top-flat.txt"
go tool pprof -top -cum -nodecount 60 "$OUT/rlserver" "$OUT/cpu.prof" 2>/dev/null >"$OUT/top-cum.txt"
echo "cumulative view: $OUT/top-cum.txt; interactive: go tool pprof $OUT/rlserver $OUT/cpu.prof"
