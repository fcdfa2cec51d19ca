#!/usr/bin/env bash
# bench/failover.sh BIN: failover time of a cluster run by etcd. Starts
# etcd and six rlservers (3 primaries + 3 replicas, default lease TTL),
# then KILLS times: SIGKILL the primary of slot 3443, time until another
# node answers a decision on that slot as its primary, restart the killed
# node and wait until it is a connected replica again. Prints each time
# and min/median/max. Then one more kill under load, with bench/overadmit
# counting what the failover over-admits per limiter kind without WAIT.
set -euo pipefail
bin=$(realpath "$1")
kills=${KILLS:-10}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null; rm -rf "$tmp"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cp=$(free_port) pp=$(free_port)
etcd --data-dir "$tmp/etcd" --listen-client-urls "http://127.0.0.1:$cp" --advertise-client-urls "http://127.0.0.1:$cp" \
	--listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
	--initial-cluster "default=http://127.0.0.1:$pp" >"$tmp/etcd.log" 2>&1 &
for _ in $(seq 100); do grep -q 'ready to serve client requests' "$tmp/etcd.log" && break; sleep 0.1; done
declare -a ports pids
start() { # i
	"$bin" --port "${ports[$1]}" --dir "$tmp/n$1" --cluster-etcd "127.0.0.1:$cp" >>"$tmp/n$1.log" 2>&1 &
	pids[$1]=$!
}
for i in 0 1 2 3 4 5; do ports[$i]=$(free_port); start $i; done
ok() { redis-cli -p "$1" cluster info 2>/dev/null | grep -q 'cluster_state:ok'; }
connected_replica() { [ "$(redis-cli -p "$1" role 2>/dev/null | sed -n 4p)" = connected ]; }
synced() { # every primary lists a replica, every replica connected
	for p in "${ports[@]}"; do
		case "$(redis-cli -p "$p" role 2>/dev/null | head -1)" in
		master) [ "$(redis-cli -p "$p" role | wc -l)" -ge 5 ] || return 1 ;;
		slave) connected_replica "$p" || return 1 ;;
		*) return 1 ;;
		esac
	done
}
for _ in $(seq 300); do synced && break; sleep 0.1; done
primary_of_3443() { # the port a live node names as slot 3443's primary
	redis-cli -p "$1" cluster nodes 2>/dev/null | awk '$3 ~ /master/ { for (i = 9; i <= NF; i++) { split($i, r, "-"); if (r[2] == "") r[2] = r[1]; if (3443 >= r[1] && 3443 <= r[2]) { split($2, a, "[:@]"); print a[2] } } }'
}
times=()
for k in $(seq "$kills"); do
	p=$(primary_of_3443 "${ports[0]}")
	[ -n "$p" ] || p=$(primary_of_3443 "${ports[1]}")
	for i in 0 1 2 3 4 5; do [ "${ports[$i]}" = "$p" ] && victim=$i; done
	other=$(((victim + 1) % 6))
	t0=$(date +%s%N)
	kill -9 "${pids[$victim]}"
	wait "${pids[$victim]}" 2>/dev/null || true
	while :; do
		np=$(primary_of_3443 "${ports[$other]}")
		if [ -n "$np" ] && [ "$np" != "$p" ] && redis-cli -p "$np" cl.throttle '{user1000}.f' 1000000 1000000 1 2>/dev/null | head -1 | grep -qx 0; then
			break
		fi
		sleep 0.02
	done
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
	times+=("$ms")
	echo "kill $k: primary $p replaced by $np in $ms ms"
	start "$victim"
	for _ in $(seq 600); do connected_replica "$p" && break; sleep 0.05; done
	for _ in $(seq 300); do synced && break; sleep 0.1; done
done
printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END{printf "failover over %d kills: min %d ms, median %d ms, max %d ms\n", NR, a[1], a[int((NR+1)/2)], a[NR]}'

# What a failover over-admits without WAIT, per limiter kind, under load.
p=$(primary_of_3443 "${ports[0]}")
[ -n "$p" ] || p=$(primary_of_3443 "${ports[1]}")
for i in 0 1 2 3 4 5; do [ "${ports[$i]}" = "$p" ] && victim=$i; done
others=$(for i in 0 1 2 3 4 5; do if [ "$i" != "$victim" ]; then printf '127.0.0.1:%s,' "${ports[$i]}"; fi; done)
go build -o "$tmp/overadmit" ./bench/overadmit
"$tmp/overadmit" -primary "127.0.0.1:$p" -others "${others%,}" -kill "kill -9 ${pids[$victim]}"
