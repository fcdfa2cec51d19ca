#!/usr/bin/env bash
# bench/cluster.sh: what cluster mode and replication cost one rlserver
# build, side by side, with persistence on (the default configuration):
#   standalone   --port P
#   cluster      --cluster-config (one shard, every slot, no replica)
#   replicated   the same with one replica (a second process)
# Server CPU per request of the node serving the load (the primary: its
# replica's CPU is not counted) and requests a second, alternating the
# three in each round; medians over ROUNDS. Then replication lag under
# that load (bench/repllag) and the time a new replica takes to copy
# KEYS_SYNC keys.
#
# Usage: bench/cluster.sh BIN [NEW_BIN]
# With two builds each round runs the three modes of one, then of the
# other (medians per build and mode, and the median of the per-round
# ratios new / old); the lag and the full copy are of the last build.
# Environment: ROUNDS (3), N (800000 per run), KEYS (100000),
#   PERSIST (1; 0 runs with --dir ''), KEYS_SYNC (1000000),
#   CPU_RATE (unset: as fast as redis-benchmark goes): the CPU runs at this
#   many requests a second instead (bench/paced), so that every mode does
#   the same work a second and the time-driven part (flushes of the hot
#   keys, the sweep) weighs the same per request,
#   LAG_RATE (200000): decisions a second of the paced load on the
#   primary while the lag is probed (bench/paced), in LOAD_CLIENTS
#   (50) connections of LOAD_PIPELINE (16) requests; LAG_RATE=0 loads it
#   with redis-benchmark as fast as it goes instead (LOAD_N requests,
#   4000000, run to their end)
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
bins=()
for b in "$@"; do bins+=("$(realpath "$b")"); done
rounds=${ROUNDS:-3} n=${N:-800000}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/repllag" ./bench/repllag
go build -o "$tmp/paced" ./bench/paced

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

topology() { # file primary_port [replica_port]
	local reps=''
	[ -n "${3:-}" ] && reps=", \"replicas\": [{\"id\": \"$(printf 'b%.0s' {1..40})\", \"host\": \"127.0.0.1\", \"port\": $3}]"
	cat >"$1" <<JSON
{"version": 1, "shards": [{"slots": [[0, 16383]], "primary": {"id": "$(printf 'a%.0s' {1..40})", "host": "127.0.0.1", "port": $2}$reps}]}
JSON
}

dir_of() { if [ "${PERSIST:-1}" = 1 ]; then mktemp -d -p "$tmp"; else echo ''; fi; }

wait_ready() { # log
	for _ in $(seq 400); do grep -qs 'ready: listening' "$1" && return 0; sleep 0.05; done
	echo "not ready: $1" >&2; cat "$1" >&2; return 1
}

start_mode() { # mode -> sets pid, port, rpid
	port=$(free_port) rpid=''
	local args=(--port "$port" --dir "$(dir_of)" --threads 1)
	case $1 in
	cluster) topology "$tmp/topo.json" "$port"; args+=(--cluster-config "$tmp/topo.json") ;;
	replicated)
		rport=$(free_port)
		topology "$tmp/topo.json" "$port" "$rport"
		"$bin" --port "$rport" --dir "$(dir_of)" --threads 1 --cluster-config "$tmp/topo.json" >"$tmp/rlog" 2>&1 &
		rpid=$!
		wait_ready "$tmp/rlog"
		args+=(--cluster-config "$tmp/topo.json") ;;
	esac
	"$bin" "${args[@]}" >"$tmp/log" 2>&1 &
	pid=$!
	wait_ready "$tmp/log"
	if [ "$1" = replicated ]; then
		for _ in $(seq 400); do grep -q 'full copy complete' "$tmp/rlog" && break; sleep 0.05; done
	fi
}

stop_mode() {
	kill $pid ${rpid:-} 2>/dev/null || true
	wait $pid ${rpid:-} 2>/dev/null || true
}

declare -A res
for r in $(seq "$rounds"); do
	for bi in "${!bins[@]}"; do
		bin=${bins[$bi]}
		for mode in standalone cluster replicated; do
			start_mode $mode
			before=$(cpu_ns $pid) start=$(date +%s%N)
			if [ -n "${CPU_RATE:-}" ]; then
				"$tmp/paced" -addr "127.0.0.1:$port" -rate "$CPU_RATE" -n "$n" -conns 50 -pipeline 16 -r "${KEYS:-100000}" \
					-cmd 'CL.THROTTLE t:__rand_int__ 1000000 1000000 1' >/dev/null
			else
				redis-benchmark -p "$port" -c 50 -P 16 -n "$n" -r "${KEYS:-100000}" -q CL.THROTTLE t:__rand_int__ 1000000 1000000 1 >/dev/null
			fi
			end=$(date +%s%N) after=$(cpu_ns $pid)
			stop_mode
			line=$(awk -v c=$((after - before)) -v n="$n" -v d=$((end - start)) 'BEGIN{printf "%.3f %.0f", c/n/1000, n/(d/1e9)}')
			echo "round $r build $bi $mode: cpu_us/req ops/s = $line"
			res[$bi:$mode]+="$line"$'\n'
		done
	done
done
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
for bi in "${!bins[@]}"; do
	for mode in standalone cluster replicated; do
		[ -n "${res[$bi:$mode]:-}" ] || continue
		cpu=$(printf '%s' "${res[$bi:$mode]}" | awk '{print $1}' | median)
		ops=$(printf '%s' "${res[$bi:$mode]}" | awk '{print $2}' | median)
		echo "median build $bi $mode: ${cpu} us/req, ${ops} ops/s"
	done
	[ -n "${res[$bi:standalone]:-}" ] || continue
	# Per round: cluster / standalone and replicated / cluster.
	paste <(printf '%s' "${res[$bi:standalone]}") <(printf '%s' "${res[$bi:cluster]}") <(printf '%s' "${res[$bi:replicated]}") |
		awk '{printf "%.3f %.3f\n", $3/$1, $5/$3}' >"$tmp/ratios$bi"
	echo "build $bi: cluster/standalone $(awk '{print $1}' "$tmp/ratios$bi" | median), replicated/cluster $(awk '{print $2}' "$tmp/ratios$bi" | median) (medians of round ratios: $(tr '\n' ' ' <"$tmp/ratios$bi"))"
done
if [ ${#bins[@]} = 2 ] && [ -n "${res[0:standalone]:-}" ]; then
	for mode in standalone cluster replicated; do
		r=$(paste <(printf '%s' "${res[0:$mode]}") <(printf '%s' "${res[1:$mode]}") | awk '{print $3/$1}' | median)
		echo "new / old $mode CPU per request: $r (median of round ratios)"
	done
fi
bin=${bins[-1]}

# Lag under load, then a full copy of KEYS_SYNC keys to a new replica.
start_mode replicated
if [ "${LAG_RATE:-200000}" != 0 ]; then
	# A paced load at the rate the target names, for about 15 s; the
	# probes start once it runs.
	"$tmp/paced" -addr "127.0.0.1:$port" -rate "${LAG_RATE:-200000}" -n $((${LAG_RATE:-200000} * 15)) \
		-conns "${LOAD_CLIENTS:-50}" -pipeline "${LOAD_PIPELINE:-16}" -r "${KEYS:-100000}" \
		-cmd 'CL.THROTTLE t:__rand_int__ 1000000 1000000 1' >"$tmp/load" 2>&1 &
else
	redis-benchmark -p "$port" -c "${LOAD_CLIENTS:-50}" -P "${LOAD_PIPELINE:-16}" -n "${LOAD_N:-4000000}" -r "${KEYS:-100000}" -q CL.THROTTLE t:__rand_int__ 1000000 1000000 1 >"$tmp/load" 2>&1 &
fi
load=$!
sleep 1
"$tmp/repllag" -primary "127.0.0.1:$port" -replica "127.0.0.1:$rport" -n 2000
wait $load 2>/dev/null || true
echo "load during the probes: $(tr '\r' '\n' <"$tmp/load" | grep -E 'requests' | tail -1)"
kill $rpid; wait $rpid 2>/dev/null || true
ks=${KEYS_SYNC:-1000000}
# Limiters that stay non-fresh for an hour, on ~KEYS_SYNC distinct keys.
redis-benchmark -p "$port" -c 50 -P 64 -n "$ks" -r 100000000 -q CL.THROTTLE s:__rand_int__ 10 1 3600 >/dev/null
echo "primary holds $(redis-cli -p "$port" dbsize) keys"
"$bin" --port "$rport" --dir "$(dir_of)" --threads 1 --cluster-config "$tmp/topo.json" >"$tmp/rlog2" 2>&1 &
rpid=$!
for _ in $(seq 1200); do grep -qs 'full copy complete' "$tmp/rlog2" && break; sleep 0.05; done
grep -hE 'full copy' "$tmp/rlog2" "$tmp/log" | tail -3
b=$(grep 'full copy from primary' "$tmp/rlog2" | tail -1 | awk '{print $3}')
e=$(grep 'full copy complete' "$tmp/rlog2" | tail -1 | awk '{print $3}')
python3 -c "
from datetime import datetime as d
f='%H:%M:%S.%f'
print('replica full copy: %.3f s from FULL to complete' % (d.strptime('$e', f) - d.strptime('$b', f)).total_seconds())"
stop_mode
