#!/usr/bin/env bash
# bench/compare.sh: rlserver against Redis + Lua, side by side, on this
# machine, in one run. See BENCHMARKS.md for what it measures and why.
#
# Starts a real redis-server (persistence off) and rlserver (--dir '', in
# memory) on free loopback ports, and drives both with redis-benchmark:
# 50 clients, pipelines of 1 and 16, a hot key and 100,000 random keys.
# Each workload runs ROUNDS times, rlserver and Redis alternating
# (A B A B ...): in each round rlserver's run of a limiter is followed by
# the ceiling server's, the Lua script's and a Redis INCR run. The report
# takes medians, and the ratios are medians of the per-round ratios, so
# that noise shared by a round cancels. Then it loads
# MEM_KEYS distinct keys of each limiter kind into fresh servers and reports
# bytes per key.
#
# Usage: bench/compare.sh
# Environment:
#   QUICK=1          ~2-minute run (fewer requests per run, 200,000 keys for memory)
#   (pipelined runs of fast commands, rlserver's and Redis PING/INCR, use 4 × N16)
#   ROUNDS=n         alternating rounds per workload (default 3; at least 3 for medians)
#   N1=n N16=n       requests per run at pipeline 1 / 16 (default 100000 / 400000)
#   PIPELINES="1 16" pipelines to run
#   KEYMODES="hot random"
#   WORKLOADS="..."  subset of: tokenbucket gcra fixed log sliding leaky acquire all3 ping incr
#   MEM_KEYS=n       keys per kind for the memory part (default 1000000; 0 skips it)
#   SKIP_THROUGHPUT=1  memory part only
#   PERSIST=1        run rlserver with a temporary --dir (Pebble) instead of --dir ''
#   DURABLE=0        skip the durable comparison (below)
#   DURABLE_N=n      requests per durable run (default 2000000; 4 × fewer for Lua)
#
# The durable comparison (DURABLE=1, the default) is the configuration users
# run: CL.TOKENBUCKET tb:__rand_int__ 100 1 1h on 1,000,000 random long-lived
# keys and on a hot key, P16, on the same rlserver build with its default
# persistence (a fresh --dir, --appendfsync everysec, --save-interval 1s)
# and in memory (--dir ''), against Redis with appendonly yes, appendfsync
# everysec running INCR and the token-bucket Lua script, alternating in
# each round. It reports each server's median rate and p99 and the medians
# of the per-round ratios.
#   RL_DURABLE_ARGS  further flags for the durable rlserver only (e.g. --event-loops 1)
#   OUT=dir          keep raw results there (default: a temp dir, removed on exit)
#   RLSERVER_BIN=path  use this binary instead of building ./cmd/rlserver
#   RL_IO=mode       rlserver --io: epoll (default) or goroutines
#   RL_THREADS=n     rlserver --threads (default 1: like redis-server's one
#                    thread, and the other core is the load generator's)
#   CEILING=0        skip the ceiling server (bench/ceiling: answers each
#                    rlserver command with a copy of rlserver's reply,
#                    doing no work; its rate is the most this load
#                    generator gets from any server for that row)
#
# Idempotent; never targets anything but 127.0.0.1; stops its own servers on
# exit (trap).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
ROOT=$PWD

ROUNDS=${ROUNDS:-3}
if [[ ${QUICK:-0} == 1 ]]; then
	N1=${N1:-30000}
	N16=${N16:-120000}
	MEM_KEYS=${MEM_KEYS:-200000}
else
	N1=${N1:-100000}
	N16=${N16:-400000}
	MEM_KEYS=${MEM_KEYS:-1000000}
fi
PIPELINES=${PIPELINES:-"1 16"}
KEYMODES=${KEYMODES:-"hot random"}
WORKLOADS=${WORKLOADS:-"tokenbucket gcra fixed log sliding leaky acquire all3 ping incr"}
RANDKEYS=100000
CLIENTS=50
HOST=127.0.0.1

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# --- tools -------------------------------------------------------------------
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null || ! command -v redis-cli >/dev/null; then
	log "installing redis-server and redis-tools (apt-get)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq redis-server redis-tools >/dev/null
fi
# The Debian package starts a system redis on 6379; we never use it.

TMP=$(mktemp -d /tmp/rlbench.XXXXXX)
OUT=${OUT:-$TMP/out}
mkdir -p "$OUT"
PIDS=()
cleanup() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -n ${RLSERVER_BIN:-} ]]; then
	RL_BIN=$RLSERVER_BIN
else
	RL_BIN=$TMP/rlserver
	log "building rlserver"
	go build -o "$RL_BIN" ./cmd/rlserver
fi
CEIL_BIN=$TMP/ceiling
if [[ ${CEILING:-1} == 1 ]]; then
	go build -o "$CEIL_BIN" ./bench/ceiling
fi

# --- servers -----------------------------------------------------------------
# Ports are picked below the kernel's ephemeral range, so that no client
# connection of an earlier run (redis-benchmark opens thousands) holds one.
USED_PORTS=" "
EPHEMERAL_LOW=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
PORT_LOW=$((EPHEMERAL_LOW > 12000 ? 10000 : 2000))
# free_port sets FREE_PORT (not echoed: a subshell would lose USED_PORTS).
free_port() {
	local p i
	for i in $(seq 200); do
		p=$((PORT_LOW + RANDOM % (EPHEMERAL_LOW - PORT_LOW)))
		[[ $USED_PORTS == *" $p "* ]] && continue
		if ! (exec 3<>"/dev/tcp/$HOST/$p") 2>/dev/null; then
			USED_PORTS+="$p "
			FREE_PORT=$p
			return 0
		fi
	done
	echo "no free port" >&2
	return 1
}

wait_ready() { # port pid
	local i
	for i in $(seq 100); do
		if [[ $(redis-cli -h $HOST -p "$1" PING 2>/dev/null) == PONG ]]; then
			return 0
		fi
		kill -0 "$2" 2>/dev/null || break
		sleep 0.1
	done
	echo "server on port $1 did not start" >&2
	return 1
}

# start_server: starts a server on a fresh free port and waits until it
# answers PING; sets PORT and PID (three tries on fresh ports). The launcher
# gets the port and a log file and must exec the server, so that PID is the
# server's own (stop kills it, cpu_ns reads it).
start_server() { # launcher name
	local try log
	for try in 1 2 3; do
		free_port
		PORT=$FREE_PORT
		log=$TMP/$2.$PORT.log
		"$1" "$PORT" "$log" &
		PID=$!
		PIDS+=("$PID")
		wait_ready "$PORT" "$PID" && return 0
		tail -5 "$log" >&2
		stop "$PID"
	done
	exit 1
}

launch_redis() { # port log
	mkdir -p "$TMP/redis.$1"
	exec redis-server --bind $HOST --port "$1" --protected-mode yes \
		--save '' --appendonly no --dir "$TMP/redis.$1" --logfile "$2" \
		--daemonize no --io-threads 1
}

launch_redis_aof() { # port log
	mkdir -p "$TMP/redisaof.$1"
	exec redis-server --bind $HOST --port "$1" --protected-mode yes \
		--save '' --appendonly yes --appendfsync everysec --dir "$TMP/redisaof.$1" --logfile "$2" \
		--daemonize no --io-threads 1
}

launch_rl_durable() { # port log
	# shellcheck disable=SC2086
	exec "$RL_BIN" --bind $HOST --port "$1" --dir "$TMP/rldurable.$1" --threads "${RL_THREADS:-1}" --io "${RL_IO:-epoll}" ${RL_DURABLE_ARGS:-} >"$2" 2>&1
}

launch_rl_mem() { # port log
	exec "$RL_BIN" --bind $HOST --port "$1" --dir '' --threads "${RL_THREADS:-1}" --io "${RL_IO:-epoll}" >"$2" 2>&1
}

launch_rl() { # port log
	local dir=''
	if [[ ${PERSIST:-0} == 1 ]]; then
		dir=$TMP/rldata.$1
	fi
	exec "$RL_BIN" --bind $HOST --port "$1" --dir "$dir" --threads "${RL_THREADS:-1}" --io "${RL_IO:-epoll}" >"$2" 2>&1
}

# The ceiling copies the replies of the rlserver on RL_PORT.
launch_ceiling() { # port log
	exec "$CEIL_BIN" -addr "$HOST:$1" -upstream "$HOST:$RL_PORT" >"$2" 2>&1
}

start_redis() { start_server launch_redis redis && REDIS_PORT=$PORT REDIS_PID=$PID; }
start_rl() { start_server launch_rl rlserver && RL_PORT=$PORT RL_PID=$PID; }
start_ceiling() { start_server launch_ceiling ceiling && CEIL_PORT=$PORT CEIL_PID=$PID; }

stop() { # pid
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# Lua scripts: SCRIPT LOAD into the given redis; sets SHA_<name>.
load_scripts() { # port
	local s
	for s in tokenbucket gcra fixedwindow slidinglog slidingwindow; do
		printf -v "SHA_$s" '%s' "$(redis-cli -h $HOST -p "$1" SCRIPT LOAD "$(cat "$ROOT/bench/lua/$s.lua")")"
	done
}

rss() { awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$1/status"; }
# used_memory is read after MEMORY PURGE on both servers: Redis's allocator
# returns its dirty pages, rlserver collects garbage (index tables replaced
# as they grew), so that both count live memory (Redis's used_memory never
# includes freed memory; Go's heap figure does until the next collection).
used_memory() {
	redis-cli -h $HOST -p "$1" MEMORY PURGE >/dev/null
	redis-cli -h $HOST -p "$1" INFO memory | tr -d '\r' | awk -F: '$1 == "used_memory" {print $2}'
}

# --- workloads ---------------------------------------------------------------
# Limiter parameters are generous so that the hot key is mostly admitted (the
# admit path, which writes state, is the one that costs); LOG and ACQUIRE
# keep O(limit) state, so they use a short window / lease instead.
declare -A RL LUA
set_workloads() {
	RL[tokenbucket]="CL.TOKENBUCKET tb:__rand_int__ 1000000 1000000 1"
	LUA[tokenbucket]="EVALSHA $SHA_tokenbucket 2 tb:__rand_int__:t tb:__rand_int__:s 1000000 1000000 1"
	RL[gcra]="CL.THROTTLE gc:__rand_int__ 1000000 1000000 1"
	LUA[gcra]="EVALSHA $SHA_gcra 1 gc:__rand_int__ 1000000 1000000 1 1"
	RL[fixed]="CL.WINDOW fx:__rand_int__ 1000000000 60 FIXED"
	LUA[fixed]="EVALSHA $SHA_fixedwindow 1 fx:__rand_int__ 1000000000 60000 1"
	RL[log]="CL.WINDOW lg:__rand_int__ 10000 10ms LOG"
	LUA[log]="EVALSHA $SHA_slidinglog 1 lg:__rand_int__ 10000 10 1"
	RL[sliding]="CL.WINDOW sw:__rand_int__ 1000000000 60 SLIDING"
	LUA[sliding]="EVALSHA $SHA_slidingwindow 1 sw:__rand_int__ 1000000000 60000 1"
	RL[leaky]="CL.LEAKYBUCKET lk:__rand_int__ 1000000 1000000 1"
	RL[acquire]="CL.ACQUIRE aq:__rand_int__ 1000 10ms"
	RL[all3]="CL.ALL 3 TOKENBUCKET au:__rand_int__ 1000000 1000000 1 THROTTLE ai:__rand_int__ 1000000 1000000 1 FIXED ar:__rand_int__ 1000000000 60"
	RL[ping]="PING"
	LUA[ping]="PING"
	LUA[incr]="INCR in:__rand_int__"
}

# sanity: every command answers without an error before we time it.
sanity() { # port command...
	local out
	out=$(redis-cli -h $HOST -p "$1" "${@:2}" 2>&1 | head -1)
	if [[ $out == ERR* || $out == WRONGTYPE* || $out == *rror* || $out == NOSCRIPT* ]]; then
		echo "sanity check failed on port $1: ${*:2} -> $out" >&2
		exit 1
	fi
}

# cpu_ns: CPU time of a process's threads so far, in ns (schedstat's
# time on CPU: exact, unlike /proc/PID/stat's 10 ms ticks).
# bench: one redis-benchmark run; appends a line to results.tsv: the rate,
# the latencies, and the server's CPU per request (µs, from /proc).
bench() { # port pid pipeline keymode workload server round command
	local port=$1 pid=$2 p=$3 mode=$4 w=$5 srv=$6 round=$7 cmd=$8 n rflag=() line t0 cpu
	n=$N1
	if [[ $p -gt 1 ]]; then
		n=$N16
		# Pipelined runs of fast commands (rlserver's, Redis PING and INCR)
		# take 4× the requests, so that each lasts about a second like the
		# Lua runs: a run of 0.3 s varied by ±15% between rounds.
		if [[ $srv == rl || $srv == ceil || $srv == incr || $w == ping || $w == incr ]]; then
			n=$((4 * N16))
		fi
	fi
	if [[ $mode == hot ]]; then
		cmd=${cmd//__rand_int__/hot}
	else
		rflag=(-r $RANDKEYS)
	fi
	local -a args
	read -ra args <<<"$cmd"
	t0=$(cpu_ns "$pid")
	line=$(redis-benchmark -h $HOST -p "$port" -c $CLIENTS -P "$p" -n "$n" "${rflag[@]}" --csv "${args[@]}" 2>/dev/null | tail -1)
	cpu=$(awk -v a="$t0" -v b="$(cpu_ns "$pid")" -v n="$n" 'BEGIN {printf "%.3f", (b - a) / 1000 / n}')
	# "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
	echo "$line" | awk -F'","' -v p="$p" -v m="$mode" -v w="$w" -v s="$srv" -v r="$round" -v cpu="$cpu" \
		'{gsub(/"/, "", $8); printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p, m, w, s, r, $2, $5, $7, cpu}' >>"$OUT/results.tsv"
	echo "$line" | awk -F'","' -v p="$p" -v m="$mode" -v w="$w" -v s="$srv" -v r="$round" -v cpu="$cpu" \
		'{printf "  P%-2s %-6s %-11s %-5s round %s: %10.0f ops/s  p50 %s  p99 %s ms  server CPU %s µs/op\n", p, m, w, s, r, $2, $5, $7, cpu}' >&2
}

has() { [[ " $WORKLOADS " == *" $1 "* ]]; }

throughput() {
	start_redis
	start_rl
	[[ ${CEILING:-1} == 1 ]] && start_ceiling
	load_scripts "$REDIS_PORT"
	set_workloads
	log "redis-server $(redis-server --version | awk '{print $3}') on $HOST:$REDIS_PORT, rlserver on $HOST:$RL_PORT (dir '${PERSIST:+tmp}')"
	local w
	for w in $WORKLOADS; do
		[[ -n ${RL[$w]:-} ]] && sanity "$RL_PORT" ${RL[$w]//__rand_int__/check}
		[[ -n ${LUA[$w]:-} ]] && sanity "$REDIS_PORT" ${LUA[$w]//__rand_int__/check}
	done
	# Warm up both (connections, Go heap growth, Lua JIT-less interpreter caches).
	redis-benchmark -h $HOST -p "$RL_PORT" -c $CLIENTS -P 16 -n 50000 -r $RANDKEYS -q ${RL[gcra]} >/dev/null 2>&1
	redis-benchmark -h $HOST -p "$REDIS_PORT" -c $CLIENTS -P 16 -n 50000 -r $RANDKEYS -q ${LUA[gcra]} >/dev/null 2>&1
	: >"$OUT/results.tsv"
	local p mode round
	for p in $PIPELINES; do
		for round in $(seq "$ROUNDS"); do
			log "pipeline $p, round $round of $ROUNDS"
			for w in $WORKLOADS; do
				# A workload's hot-key and random-key runs come one after
				# the other, so that their per-round ratio, like the others,
				# compares runs seconds apart.
				for mode in $KEYMODES; do
					if [[ -n ${RL[$w]:-} ]]; then
						bench "$RL_PORT" "$RL_PID" "$p" "$mode" "$w" rl "$round" "${RL[$w]}"
						if [[ ${CEILING:-1} == 1 ]]; then
							bench "$CEIL_PORT" "$CEIL_PID" "$p" "$mode" "$w" ceil "$round" "${RL[$w]}"
						fi
					fi
					if [[ -n ${LUA[$w]:-} ]]; then
						bench "$REDIS_PORT" "$REDIS_PID" "$p" "$mode" "$w" redis "$round" "${LUA[$w]}"
					fi
					# Redis INCR right after each limiter's runs, so that the
					# rlserver / INCR ratio also comes from adjacent runs.
					if [[ -n ${RL[$w]:-} && $w != ping ]] && has incr; then
						bench "$REDIS_PORT" "$REDIS_PID" "$p" "$mode" "$w" incr "$round" "${LUA[incr]}"
					fi
				done
			done
		done
	done
	[[ ${CEILING:-1} == 1 ]] && stop "$CEIL_PID"
	stop "$RL_PID"
	stop "$REDIS_PID"
}

# --- durable -----------------------------------------------------------------
# durable_run: one redis-benchmark run for the durable comparison; appends
# "mode server round rps p99" to durable.tsv.
durable_run() { # port pid mode server round n command...
	local port=$1 pid=$2 mode=$3 srv=$4 round=$5 n=$6 line t0 cpu
	shift 6
	local -a args=("$@") rflag=(-r 1000000)
	if [[ $mode == hot ]]; then
		args=("${args[@]//__rand_int__/hot}")
		rflag=()
	fi
	t0=$(cpu_ns "$pid")
	line=$(redis-benchmark -h $HOST -p "$port" -c $CLIENTS -P 16 -n "$n" "${rflag[@]}" --csv "${args[@]}" 2>/dev/null | tail -1)
	cpu=$(awk -v a="$t0" -v b="$(cpu_ns "$pid")" -v n="$n" 'BEGIN {printf "%.3f", (b - a) / 1000 / n}')
	echo "$line" | awk -F'","' -v m="$mode" -v s="$srv" -v r="$round" -v cpu="$cpu" \
		'{gsub(/"/, "", $8); printf "%s\t%s\t%s\t%s\t%s\t%s\n", m, s, r, $2, $7, cpu}' >>"$OUT/durable.tsv"
	echo "$line" | awk -F'","' -v m="$mode" -v s="$srv" -v r="$round" -v cpu="$cpu" \
		'{printf "  durable P16 %-6s %-10s round %s: %10.0f ops/s  p99 %s ms  server CPU %s µs/op\n", m, s, r, $2, $7, cpu}' >&2
}

# settle waits (up to 60 s) until the last run's aftermath is over, so that
# a run never pays for the one before it: Redis's AOF rewrite (its child
# rewrites the whole dataset after a big run), rlserver's flushes and
# rewrites, the kernel's write-back. It polls until Redis reports no
# rewrite and the machine was under 10% busy for 300 ms.
settle() { # redis-port
	local deadline=$((SECONDS + 60)) a b
	while ((SECONDS < deadline)); do
		if redis-cli -h $HOST -p "$1" INFO persistence | tr -d '\r' | grep -qE '^aof_rewrite_(in_progress|scheduled):1'; then
			sleep 0.1
			continue
		fi
		a=$(awk '/^cpu /{print $2+$3+$4+$6+$7+$8, $5}' /proc/stat)
		sleep 0.3
		b=$(awk '/^cpu /{print $2+$3+$4+$6+$7+$8, $5}' /proc/stat)
		if awk -v a="$a" -v b="$b" 'BEGIN {split(a, x); split(b, y); busy = y[1] - x[1]; idle = y[2] - x[2]; exit !(busy < 0.1 * (busy + idle))}'; then
			return
		fi
	done
	log "settle: the machine did not go idle within 60 s"
}

durable() {
	local dn=${DURABLE_N:-2000000}
	start_server launch_rl_durable rl-durable && local DPORT=$PORT DPID=$PID
	start_server launch_rl_mem rl-mem && local MPORT=$PORT MPID=$PID
	start_server launch_redis_aof redis-aof && local APORT=$PORT APID=$PID
	load_scripts "$APORT"
	local tb="CL.TOKENBUCKET tb:__rand_int__ 100 1 1h"
	local lua="EVALSHA $SHA_tokenbucket 2 tb:__rand_int__:t tb:__rand_int__:s 0.000277777777 100 1"
	sanity "$DPORT" ${tb//__rand_int__/check}
	sanity "$APORT" ${lua//__rand_int__/check}
	log "durable: rlserver --dir on $DPORT, rlserver --dir '' on $MPORT, redis appendonly everysec on $APORT"
	: >"$OUT/durable.tsv"
	local round mode
	for round in $(seq "$ROUNDS"); do
		for mode in random hot; do
			settle "$APORT"
			# shellcheck disable=SC2086
			durable_run "$DPORT" "$DPID" $mode rl-durable "$round" "$dn" $tb
			settle "$APORT"
			# shellcheck disable=SC2086
			durable_run "$MPORT" "$MPID" $mode rl-memory "$round" "$dn" $tb
			settle "$APORT"
			durable_run "$APORT" "$APID" $mode incr-aof "$round" "$dn" INCR in:__rand_int__
			settle "$APORT"
			# shellcheck disable=SC2086
			durable_run "$APORT" "$APID" $mode lua-aof "$round" $((dn / 4)) $lua
		done
	done
	redis-cli -h $HOST -p "$DPORT" INFO persistence | tr -d '\r' | grep -E '^(rl_loss_window_ms|rl_last_flush_duration_us|rl_rewrites|rdb_last_bgsave_status):' | tr '\n' ' ' >"$OUT/durable.info"
	stop "$DPID"
	stop "$MPID"
	stop "$APID"
	flush_impact
}

launch_rl_hourly() { # port log
	exec "$RL_BIN" --bind $HOST --port "$1" --dir "$TMP/rlhourly.$1" --save-interval 1h --threads "${RL_THREADS:-1}" --io "${RL_IO:-epoll}" >"$2" 2>&1
}

# flush_impact: one client's p99 (redis-benchmark -c 1, CL.TOKENBUCKET on
# a key of its own) while the server is idle with 1M keys, and while a
# flush of about 1M changed keys runs (BGSAVE on a server saving hourly),
# ROUNDS times; appends "round idle_p99 flush_p99 flush_us keys" to
# flush.tsv.
flush_impact() {
	start_server launch_rl_hourly rl-hourly && local FPORT=$PORT FPID=$PID
	local round idle busy us keys probe=(CL.TOKENBUCKET probe 100 1 1h)
	: >"$OUT/flush.tsv"
	for round in $(seq "$ROUNDS"); do
		redis-benchmark -h $HOST -p "$FPORT" -c $CLIENTS -P 16 -n 3000000 -r 1000000 -q CL.TOKENBUCKET tb:__rand_int__ 100 1 1h >/dev/null
		redis-cli -h $HOST -p "$FPORT" SAVE >/dev/null
		idle=$(redis-benchmark -h $HOST -p "$FPORT" -c 1 -n 10000 --csv "${probe[@]}" | tail -1 | awk -F'","' '{print $7}')
		redis-benchmark -h $HOST -p "$FPORT" -c $CLIENTS -P 16 -n 3000000 -r 1000000 -q CL.TOKENBUCKET tb:__rand_int__ 100 1 1h >/dev/null
		keys=$(redis-cli -h $HOST -p "$FPORT" INFO persistence | tr -d '\r' | awk -F: '$1 == "rl_keys_pending" {print $2}')
		redis-cli -h $HOST -p "$FPORT" BGSAVE >/dev/null
		busy=$(redis-benchmark -h $HOST -p "$FPORT" -c 1 -n 10000 --csv "${probe[@]}" | tail -1 | awk -F'","' '{print $7}')
		while ! redis-cli -h $HOST -p "$FPORT" INFO persistence | grep -q 'rdb_bgsave_in_progress:0'; do sleep 0.1; done
		us=$(redis-cli -h $HOST -p "$FPORT" INFO persistence | tr -d '\r' | awk -F: '$1 == "rl_last_flush_duration_us" {print $2}')
		printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$idle" "$busy" "$us" "$keys" >>"$OUT/flush.tsv"
		log "flush impact round $round: probe p99 idle $idle ms, during a flush of $keys keys ($us µs) $busy ms"
	done
	stop "$FPID"
}

# durable_report prints the durable comparison: per key mode, each
# server's median rate and p99, and medians of per-round ratios.
durable_report() {
	echo "Durable (default persistence vs in memory vs Redis appendonly everysec), CL.TOKENBUCKET tb:__rand_int__ 100 1 1h, P16, -c $CLIENTS, median of $ROUNDS alternating rounds:"
	awk -F'\t' '
		function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } return a[int((n + 1) / 2)] }
		{ rps[$1, $2, $3] = $4; p99[$1, $2, $3] = $5; cpu[$1, $2, $3] = $6; rounds[$3] = 1; modes[$1] = 1 }
		END {
			split("rl-durable rl-memory incr-aof lua-aof", srvs, " ")
			for (m in modes) {
				printf "  %s keys%s\n", m, (m == "random" ? " (1,000,000)" : "")
				for (k = 1; k <= 4; k++) {
					s = srvs[k]; n = 0
					for (r in rounds) { n++; a[n] = rps[m, s, r]; b[n] = p99[m, s, r]; c[n] = cpu[m, s, r] }
					printf "    %-10s %10.0f ops/s  p99 %6.3f ms  server CPU %.3f µs/op\n", s, med(a, n), med(b, n), med(c, n)
				}
				n = 0; for (r in rounds) { n++; a[n] = rps[m, "rl-durable", r] / rps[m, "rl-memory", r]; b[n] = rps[m, "rl-durable", r] / rps[m, "incr-aof", r]; c[n] = rps[m, "rl-durable", r] / rps[m, "lua-aof", r] }
				printf "    durable / in memory %.2f×, durable / Redis INCR+AOF %.2f×, durable / Redis Lua+AOF %.2f× (medians of round ratios)\n", med(a, n), med(b, n), med(c, n)
			}
		}' "$OUT/durable.tsv"
	echo "  rlserver durable at the end: $(cat "$OUT/durable.info")"
	if [[ -s $OUT/flush.tsv ]]; then
		awk -F'\t' '
			function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } return a[int((n + 1) / 2)] }
			{ n++; i[n] = $2; b[n] = $3; r[n] = $3 / $2; u[n] = $4 / 1000; k[n] = $5 }
			END { printf "  One client'"'"'s p99 during a flush of %d changed keys (%.0f ms): %.3f ms vs %.3f idle, %.2f× (medians of %d rounds)\n", med(k, n), med(u, n), med(b, n), med(i, n), med(r, n), n }' "$OUT/flush.tsv"
	fi
}

# --- memory ------------------------------------------------------------------
# Inline commands, one per key, for redis-cli --pipe. Keys are
# lim:%012d (16 bytes, the length redis-benchmark's keys have); parameters
# keep every key alive for an hour.
gen() { # kind server sha
	awk -v n="$MEM_KEYS" -v kind="$1" -v srv="$2" -v sha="$3" 'BEGIN {
		for (i = 0; i < n; i++) {
			k = sprintf("lim:%012d", i)
			if (srv == "rl") {
				if (kind == "tokenbucket") c = "CL.TOKENBUCKET " k " 100 1 3600"
				else if (kind == "gcra") c = "CL.THROTTLE " k " 100 1 3600"
				else if (kind == "fixed") c = "CL.WINDOW " k " 100 3600 FIXED"
				else if (kind == "log") c = "CL.WINDOW " k " 100 3600 LOG"
				else if (kind == "sliding") c = "CL.WINDOW " k " 100 3600 SLIDING"
				else if (kind == "leaky") c = "CL.LEAKYBUCKET " k " 100 1 3600"
				else if (kind == "acquire") c = "CL.ACQUIRE " k " 100 3600"
			} else {
				if (kind == "tokenbucket") c = "EVALSHA " sha " 2 " k ":t " k ":s 0.000277777777 100 1"
				else if (kind == "gcra") c = "EVALSHA " sha " 1 " k " 100 1 3600 1"
				else if (kind == "fixed" || kind == "log" || kind == "sliding") c = "EVALSHA " sha " 1 " k " 100 3600000 1"
			}
			printf "%s\r\n", c
		}
	}'
}

memory() {
	: >"$OUT/memory.tsv"
	local kind srv sha before_used before_rss after_used after_rss port pid
	for kind in tokenbucket gcra fixed log sliding leaky acquire; do
		for srv in rl redis; do
			case $kind in leaky | acquire) [[ $srv == redis ]] && continue ;; esac
			sha=
			if [[ $srv == redis ]]; then
				start_redis
				port=$REDIS_PORT pid=$REDIS_PID
				load_scripts "$port"
				case $kind in
				tokenbucket) sha=$SHA_tokenbucket ;;
				gcra) sha=$SHA_gcra ;;
				fixed) sha=$SHA_fixedwindow ;;
				log) sha=$SHA_slidinglog ;;
				sliding) sha=$SHA_slidingwindow ;;
				esac
			else
				start_rl
				port=$RL_PORT pid=$RL_PID
			fi
			gen "$kind" "$srv" "$sha" >"$TMP/load.txt"
			sleep 0.5
			before_used=$(used_memory "$port")
			before_rss=$(rss "$pid")
			redis-cli -h $HOST -p "$port" --pipe <"$TMP/load.txt" >"$TMP/pipe.log" 2>&1 || {
				cat "$TMP/pipe.log" >&2
				exit 1
			}
			if ! grep -q 'errors: 0' "$TMP/pipe.log"; then
				cat "$TMP/pipe.log" >&2
				exit 1
			fi
			sleep 1
			after_used=$(used_memory "$port")
			after_rss=$(rss "$pid")
			local dbsize
			dbsize=$(redis-cli -h $HOST -p "$port" DBSIZE)
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$srv" "$MEM_KEYS" "$before_used" "$after_used" "$before_rss" "$after_rss" >>"$OUT/memory.tsv"
			log "memory $kind $srv: $MEM_KEYS limiters ($dbsize keys): used +$(((after_used - before_used) / MEM_KEYS)) B/key, RSS +$(((after_rss - before_rss) / MEM_KEYS)) B/key"
			stop "$pid"
		done
	done
	rm -f "$TMP/load.txt"
}

# --- main --------------------------------------------------------------------
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "machine: $(nproc) cores, $(uname -sr), load average $LOAD_BEFORE; rounds $ROUNDS, N1=$N1 N16=$N16, memory keys $MEM_KEYS"
if [[ ${SKIP_THROUGHPUT:-0} != 1 ]]; then
	throughput
fi
if [[ ${DURABLE:-1} == 1 ]]; then
	durable
fi
mem_args=()
if [[ $MEM_KEYS -gt 0 ]]; then
	memory
	mem_args=("$OUT/memory.tsv")
fi
echo
echo "$(nproc) cores, load average $LOAD_BEFORE at start and $(cut -d' ' -f1-3 /proc/loadavg) at the end; $(redis-server --version | awk '{print $1, $3}'), redis-benchmark -c $CLIENTS, $RANDKEYS random keys, $ROUNDS alternating rounds, N1=$N1 N16=$N16 (4 × N16 for rlserver, PING and INCR)$([[ ${PERSIST:-0} == 1 ]] && echo ', rlserver with --dir (persistence on)'), rlserver --threads ${RL_THREADS:-1} --io ${RL_IO:-epoll}"
echo
if [[ -s $OUT/durable.tsv ]]; then
	durable_report
	echo
fi
if [[ -s $OUT/results.tsv ]] || [[ ${#mem_args[@]} -gt 0 ]]; then
	[[ -f $OUT/results.tsv ]] || : >"$OUT/results.tsv"
	go run ./bench/report "$OUT/results.tsv" "${mem_args[@]}"
fi
