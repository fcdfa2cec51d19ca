#!/usr/bin/env bash
# bench/ab.sh: two rlserver builds side by side: server CPU per request
# (from /proc/PID/task/*/schedstat) and requests a second, alternating
# A B A B in each round so that the machine's noise falls on both alike.
# Prints one line per run and the medians.
#
# Usage: bench/ab.sh OLD_BIN NEW_BIN
# Environment:
#   ROUNDS=n    alternating rounds (default 3)
#   N=n         requests per run (default 800000)
#   KEYS=n      random keys (redis-benchmark -r; default 100000)
#   PERSIST=1   run both with a fresh --dir (Pebble, the default config)
#               instead of --dir ''
#   WORKLOADS   subset of: throttle tokenbucket window log loglong all3
#               acquire ping (loglong: a 1h LOG window, so each key's log
#               grows by every call; run it with few KEYS to box them), and
#               Redis values: get set incr zadd
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
old=$1 new=$2
rounds=${ROUNDS:-3} n=${N:-800000}
workloads=${WORKLOADS:-"throttle tokenbucket all3"}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT

cmd_of() {
	case $1 in
	throttle) echo "CL.THROTTLE t:__rand_int__ 1000000 1000000 1" ;;
	tokenbucket) echo "CL.TOKENBUCKET tb:__rand_int__ 100 1 1h" ;;
	window) echo "CL.WINDOW w:__rand_int__ 1000000000 60 FIXED" ;;
	log) echo "CL.WINDOW lg:__rand_int__ 10000 10ms LOG" ;;
	loglong) echo "CL.WINDOW ll:__rand_int__ 10000 1h LOG" ;;
	acquire) echo "CL.ACQUIRE a:__rand_int__ 1000000 10ms" ;;
	ping) echo "PING" ;;
	get) echo "GET s:__rand_int__" ;;
	set) echo "SET s:__rand_int__ 1" ;;
	incr) echo "INCR c:__rand_int__" ;;
	zadd) echo "ZADD z:__rand_int__ 1 m:__rand_int__" ;;
	all3) echo "CL.ALL 3 TOKENBUCKET au:__rand_int__ 1000000 1000000 1 THROTTLE ai:__rand_int__ 1000000 1000000 1 FIXED ar:__rand_int__ 1000000000 60" ;;
	esac
}

run_one() { # bin workload -> "cpu_us_per_req ops_per_s"
	local bin=$1 w=$2 dir=''
	[ "${PERSIST:-}" = 1 ] && dir=$(mktemp -d -p "$tmp")
	"$bin" --port 0 --dir "$dir" --threads 1 >"$tmp/log" 2>&1 &
	local pid=$!
	local port=''
	for _ in $(seq 200); do
		port=$(grep -oE 'listening on 127\.0\.0\.1:[0-9]+' "$tmp/log" | grep -oE '[0-9]+$' || true)
		[ -n "$port" ] && break
		sleep 0.05
	done
	local before after start end
	before=$(cpu_ns $pid)
	start=$(date +%s%N)
	# shellcheck disable=SC2046
	redis-benchmark -p "$port" -c 50 -P 16 -n "$n" -r "${KEYS:-100000}" -q $(cmd_of "$w") >/dev/null
	end=$(date +%s%N)
	after=$(cpu_ns $pid)
	kill $pid
	wait $pid 2>/dev/null || true
	awk -v c=$((after - before)) -v t=$((end - start)) -v n="$n" 'BEGIN { printf "%.3f %.0f\n", c / n / 1000, n / (t / 1e9) }'
}

for w in $workloads; do
	: >"$tmp/a" && : >"$tmp/b"
	for r in $(seq "$rounds"); do
		a=$(run_one "$old" "$w") && b=$(run_one "$new" "$w")
		echo "$w round $r: old $a  new $b (µs CPU/req, req/s)"
		echo "$a" >>"$tmp/a" && echo "$b" >>"$tmp/b"
	done
	ca=$(awk '{ print $1 }' "$tmp/a" | med) cb=$(awk '{ print $1 }' "$tmp/b" | med)
	ra=$(awk '{ print $2 }' "$tmp/a" | med) rb=$(awk '{ print $2 }' "$tmp/b" | med)
	# The median of the per-round ratios: noise shared by a round cancels.
	pr=$(paste "$tmp/a" "$tmp/b" | awk '{ print $3 / $1 }' | med)
	awk -v w="$w" -v ca="$ca" -v cb="$cb" -v ra="$ra" -v rb="$rb" -v pr="$pr" \
		'BEGIN { printf "%s median: CPU/req old %.3f new %.3f µs (new/old %.3f, median of round ratios %.3f); req/s old %.0f new %.0f\n", w, ca, cb, cb / ca, pr, ra, rb }'
done
