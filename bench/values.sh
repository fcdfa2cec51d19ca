#!/usr/bin/env bash
# bench/values.sh: rlserver's Redis values against redis-server, side by
# side, in one run (issue 42's targets; see BENCHMARKS.md).
#
# Two configurations, each a fresh pair of servers:
#   memory:  rlserver --dir '' against redis-server without persistence;
#   durable: rlserver with its default persistence (a fresh --dir) against
#            redis-server with appendonly yes, appendfsync everysec.
# rlserver runs with its default flags plus RL_ARGS (e.g. RL_ARGS="--threads 1").
# Workloads (bench/valload, 50 connections, pipelines of 16 commands, 100,000
# random keys): GET, SET, INCR, the INCRBY+EXPIRE pair, and a sliding log
# on a sorted set (ZREMRANGEBYSCORE, ZADD, ZCARD, PEXPIRE). Each runs ROUNDS
# times, rlserver and Redis alternating; the report gives medians of rate
# and p99 and the median of the per-round rate ratios. Then MEM_KEYS keys
# `SET key:i 1 EX 60` are loaded into fresh in-memory servers and the
# used_memory and RSS growth per key reported.
#
# Scripts (WORKLOADS="evalsha_gcra evalsha_incr evalsha_empty native_gcra
# native_window"): go-redis/redis_rate's GCRA and rate-limit-redis's
# increment through EVALSHA on both servers, an empty script, and the
# native commands that replace them (GCRA, CL.WINDOW FIXED) on rlserver
# against the scripts on Redis.
# Environment: ROUNDS (3), N (requests per run, 1000000), WORKLOADS,
# CONFIGS ("memory durable"), MEM_KEYS (1000000; 0 skips), RL_ARGS,
# RLSERVER_BIN (else ./cmd/rlserver is built), PIN (1: both servers on the
# last CPU, the load generator on the others, so that each server has a
# core to itself; rlserver then sizes its threads to that one CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
ROUNDS=${ROUNDS:-3}
N=${N:-1000000}
WORKLOADS=${WORKLOADS:-get set incr incrby_expire slidinglog}
CONFIGS=${CONFIGS:-memory durable}
MEM_KEYS=${MEM_KEYS:-1000000}
RL_ARGS=${RL_ARGS:-}
PIN=${PIN:-0}
SRV=() GEN=()
if [[ $PIN == 1 ]]; then
	last=$(($(nproc) - 1))
	[[ $last -ge 1 ]] || { echo "PIN=1 needs two CPUs" >&2; exit 1; }
	SRV=(taskset -c "$last") GEN=(taskset -c "0-$((last - 1))")
fi
TMP=$(mktemp -d)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
command -v redis-server >/dev/null || { echo "redis-server is needed (scripts/setup.sh installs it)" >&2; exit 1; }
RL=${RLSERVER_BIN:-$TMP/rlserver}
[[ -n ${RLSERVER_BIN:-} ]] || go build -o "$RL" ./cmd/rlserver
go build -o "$TMP/valload" ./bench/valload

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ready() { for _ in $(seq 100); do [[ $(redis-cli -p "$1" PING 2>/dev/null) == PONG ]] && return 0; sleep 0.1; done; echo "no server on $1" >&2; exit 1; }
start_rl() { # config -> RLP
	RLP=$(port)
	local dir=''
	[[ $1 == durable ]] && dir=$TMP/rl.$RLP
	# shellcheck disable=SC2086
	"${SRV[@]}" "$RL" --port "$RLP" --dir "$dir" $RL_ARGS >"$TMP/rl.$RLP.log" 2>&1 &
	PIDS+=($!)
	ready "$RLP"
}
start_redis() { # config -> RDP
	RDP=$(port)
	local aof=(--appendonly no)
	[[ $1 == durable ]] && aof=(--appendonly yes --appendfsync everysec)
	mkdir -p "$TMP/redis.$RDP"
	"${SRV[@]}" redis-server --port "$RDP" --save '' "${aof[@]}" --dir "$TMP/redis.$RDP" --daemonize no >"$TMP/redis.$RDP.log" 2>&1 &
	PIDS+=($!)
	ready "$RDP"
}
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }

for cfg in $CONFIGS; do
	start_rl "$cfg"
	start_redis "$cfg"
	echo "== $cfg: rlserver :$RLP ($RL_ARGS) against redis-server :$RDP${SRV:+, pinned: servers ${SRV[*]}, generator ${GEN[*]}}"
	printf '%-14s %12s %9s %12s %9s %7s\n' workload rl_rate rl_p99 redis_rate redis_p99 ratio
	for w in $WORKLOADS; do
		: >"$TMP/rl" ; : >"$TMP/rd"; : >"$TMP/ratio"
		for _ in $(seq "$ROUNDS"); do
			# A native command on rlserver against the script it replaces on Redis.
			rw=$w
			case $w in native_gcra) rw=evalsha_gcra ;; native_window) rw=evalsha_incr ;; esac
			a=$("${GEN[@]}" "$TMP/valload" -addr 127.0.0.1:"$RLP" -workload "$w" -requests "$N")
			b=$("${GEN[@]}" "$TMP/valload" -addr 127.0.0.1:"$RDP" -workload "$rw" -requests "$N")
			echo "$a" >>"$TMP/rl"; echo "$b" >>"$TMP/rd"
			echo "$(echo "$a" | field rate) $(echo "$b" | field rate)" | awk '{printf "%.3f\n", $1/$2}' >>"$TMP/ratio"
		done
		printf '%-14s %12s %9s %12s %9s %7s\n' "$w" \
			"$(field rate <"$TMP/rl" | med)" "$(field p99_ms <"$TMP/rl" | med)" \
			"$(field rate <"$TMP/rd" | med)" "$(field p99_ms <"$TMP/rd" | med)" "$(med <"$TMP/ratio")"
	done
done

if [[ $MEM_KEYS -gt 0 ]]; then
	start_rl memory
	start_redis memory
	used() { redis-cli -p "$1" INFO memory | tr -d '\r' | sed -n "s/^$2://p"; }
	echo "== memory: $MEM_KEYS keys SET key:i 1 EX 60"
	for p in "$RLP" "$RDP"; do
		u0=$(used "$p" used_memory); r0=$(used "$p" used_memory_rss)
		awk -v n="$MEM_KEYS" 'BEGIN { for (i = 0; i < n; i++) printf "*5\r\n$3\r\nSET\r\n$%d\r\nkey:%d\r\n$1\r\n1\r\n$2\r\nEX\r\n$2\r\n60\r\n", length("key:" i), i }' |
			redis-cli -p "$p" --pipe >/dev/null
		u1=$(used "$p" used_memory); r1=$(used "$p" used_memory_rss)
		keys=$(redis-cli -p "$p" DBSIZE)
		name=rlserver; [[ $p == "$RDP" ]] && name=redis
		awk -v n="$name" -v k="$keys" -v u=$((u1 - u0)) -v r=$((r1 - r0)) 'BEGIN { printf "%-9s keys=%d used_memory/key=%.1f rss/key=%.1f\n", n, k, u / k, r / k }'
	done
fi
