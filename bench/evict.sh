#!/usr/bin/env bash
# bench/evict.sh: two rlserver builds side by side under --maxmemory: one
# load generator inserts new keys as fast as it can into a server already
# full (so every insert evicts), while a probe client (one connection, no
# pipeline) runs CL.THROTTLE on one key; reports the probe's p50/p99/max
# (redis-benchmark's), the insert rate, the keyspace (used_memory_dataset),
# evicted_keys and the server's RSS at the end and once it listens (its
# base, before any key), and its anonymous RSS at the end (RSS less the
# binary's file pages, which vary with what the page cache holds of it:
# 21-27 MB for one binary and another), and the server's CPU per measured
# insert. A B A B ... in each round, medians.
#
# Usage: bench/evict.sh OLD_BIN NEW_BIN
# Environment:
#   ROUNDS=n     alternating rounds (default 3)
#   MAXMEM=size  --maxmemory (default 64mb)
#   FILL=n       inserts to fill the server first (default 1500000)
#   N=n          inserts measured (default 3000000)
#   LOAD_CLIENTS=n LOAD_PIPELINE=n   the inserting load (default 50 clients,
#                pipelines of 16: as fast as the load generator goes)
#   THREADS=n    rlserver --threads (default 1, like redis-server)
#   PERSIST=0    run in memory (--dir ''); default: a fresh --dir, the
#                configuration users run
#   RATE=n       insert at n a second (bench/paced: an open loop, so the
#                probe sees what the server makes of that rate rather than
#                a saturating load generator's queue); RATE=0: bench/paced
#                unpaced, the cheapest load this machine can generate;
#                default: redis-benchmark, as fast as it goes
#   LOG_KEYS=n   instead: no fill, and the measured load runs
#                CL.WINDOW w:K 5000 1h 1 LOG on n keys (K below n), so
#                every key's log grows by each call until the bound evicts
#                (16000 keys and N=4000000 overflow 64mb): RSS with states
#                that grow
#   REDIS=1      then the same load shape once against redis-server
#                (--maxmemory-policy volatile-ttl, SET key 1 EX 3600, the
#                probe SET probe 1; appendonly yes unless PERSIST=0)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
old=$1 new=$2
rounds=${ROUNDS:-3} maxmem=${MAXMEM:-64mb} fill=${FILL:-1500000} n=${N:-3000000}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
[ -z "${RATE:-}" ] || go build -o "$tmp/paced" ./bench/paced

insert_load() { # port command... : the measured inserts
	local port=$1
	shift
	if [ -n "${RATE:-}" ]; then
		"$tmp/paced" -addr "127.0.0.1:$port" -rate "$RATE" -n "$n" -conns "${LOAD_CLIENTS:-50}" -pipeline "${LOAD_PIPELINE:-16}" -cmd "$*"
	else
		redis-benchmark -p "$port" -c "${LOAD_CLIENTS:-50}" -P "${LOAD_PIPELINE:-16}" -n "$n" -r 100000000 -q "$@"
	fi
}

run_one() { # bin -> "p50 p99 max inserts_per_s dataset_mb evicted rss_mb base_rss_mb anon_mb cpu_us"
	local bin=$1 dir=''
	[ "${PERSIST:-1}" = 1 ] && dir=$(mktemp -d -p "$tmp")
	"$bin" --port 0 --dir "$dir" --threads "${THREADS:-1}" --maxmemory "$maxmem" >"$tmp/log" 2>&1 &
	local pid=$! port=''
	for _ in $(seq 200); do
		port=$(grep -oE 'listening on 127\.0\.0\.1:[0-9]+' "$tmp/log" | grep -oE '[0-9]+$' || true)
		[ -n "$port" ] && break
		sleep 0.05
	done
	local base
	base=$(awk '/VmRSS/ { print int($2 / 1024) }' /proc/$pid/status)
	# __rand_int__ draws from 100M: nearly every request is a new key.
	[ -n "${LOG_KEYS:-}" ] ||
		redis-benchmark -p "$port" -c 50 -P 16 -n "$fill" -r 100000000 -q CL.TOKENBUCKET f:__rand_int__ 100 1 1h >/dev/null
	local start end cpu0 cpu1
	cpu0=$(cpu_ns $pid)
	start=$(date +%s%N)
	if [ -n "${LOG_KEYS:-}" ]; then
		redis-benchmark -p "$port" -c "${LOAD_CLIENTS:-50}" -P "${LOAD_PIPELINE:-16}" -n "$n" -r "$LOG_KEYS" -q \
			CL.WINDOW w:__rand_int__ 5000 1h 1 LOG >"$tmp/load.out" &
	else
		insert_load "$port" CL.TOKENBUCKET i:__rand_int__ 100 1 1h >"$tmp/load.out" &
	fi
	local load=$!
	local probe
	probe=$(redis-benchmark -p "$port" -c 1 -P 1 -n 20000 --csv CL.THROTTLE probe 1000000 1000000 1 | tail -1)
	wait $load
	end=$(date +%s%N)
	cpu1=$(cpu_ns $pid)
	[ -z "${RATE:-}" ] || echo "  paced load: $(cat "$tmp/load.out")" >&2
	local info rss anon
	info=$(redis-cli -p "$port" info)
	rss=$(awk '/VmRSS/ { print int($2 / 1024) }' /proc/$pid/status)
	anon=$(awk '/RssAnon/ { print int($2 / 1024) }' /proc/$pid/status)
	kill $pid
	wait $pid 2>/dev/null || true
	# CSV: "test","rps","avg","min","p50","p95","p99","max"
	echo "$probe" | tr -d '"' | awk -F, -v n="$n" -v t=$((end - start)) \
		-v ds="$(echo "$info" | awk -F: '/^used_memory_dataset:/ { print int($2 / 1048576) }')" \
		-v ev="$(echo "$info" | awk -F: '/^evicted_keys:/ { print $2 + 0 }')" -v rss="$rss" -v base="$base" -v anon="$anon" \
		-v cpu=$((cpu1 - cpu0)) \
		'{ printf "%s %s %s %.0f %s %s %s %s %s %.3f\n", $5, $7, $8, n / (t / 1e9), ds, ev, rss, base, anon, cpu / n / 1000 }'
}

echo "build p50_ms p99_ms max_ms inserts/s dataset_MB evicted rss_MB base_rss_MB anon_MB cpu_us/insert"
for r in $(seq "$rounds"); do
	for b in old new; do
		bin=$old
		[ $b = new ] && bin=$new
		line=$(run_one "$bin")
		echo "$b $line"
		echo "$line" >>"$tmp/$b"
	done
done
for b in old new; do
	printf "median %s:" $b
	for col in 1 2 3 4 5 6 7 8 9 10; do
		printf " %s" "$(awk -v c=$col '{ print $c }' "$tmp/$b" | med)"
	done
	echo
done

[ "${REDIS:-0}" = 1 ] || exit 0
# Redis's own eviction under the same load shape, as a reference.
rdir=$(mktemp -d -p "$tmp")
rport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
aof=yes
[ "${PERSIST:-1}" = 1 ] || aof=no
redis-server --port "$rport" --dir "$rdir" --save '' --appendonly $aof --maxmemory "$maxmem" --maxmemory-policy volatile-ttl >"$tmp/rlog" 2>&1 &
rpid=$!
for _ in $(seq 100); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.05; done
redis-benchmark -p "$rport" -c 50 -P 16 -n "$fill" -r 100000000 -q SET f:__rand_int__ 1 EX 3600 >/dev/null
start=$(date +%s%N)
insert_load "$rport" SET i:__rand_int__ 1 EX 3600 >"$tmp/load.out" &
load=$!
probe=$(redis-benchmark -p "$rport" -c 1 -P 1 -n 20000 --csv SET probe 1 | tail -1)
wait $load
end=$(date +%s%N)
rss=$(awk '/VmRSS/ { print int($2 / 1024) }' /proc/$rpid/status)
ev=$(redis-cli -p "$rport" info stats | awk -F: '/^evicted_keys:/ { print $2 + 0 }')
redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || kill $rpid
echo "$probe" | tr -d '"' | awk -F, -v n="$n" -v t=$((end - start)) -v ev="$ev" -v rss="$rss" -v aof=$aof \
	'{ printf "redis (appendonly %s): p50 %s p99 %s max %s ms, %.0f inserts/s, %s evicted, RSS %s MB\n", aof, $5, $7, $8, n / (t / 1e9), ev, rss }'
