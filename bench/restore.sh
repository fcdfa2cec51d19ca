#!/usr/bin/env bash
# bench/restore.sh: restore time of a store left by kill -9, for several
# builds side by side. One build (GEN) makes the store: 1,000,000 keys
# created by 3M random CL.TOKENBUCKET updates (50 clients, P16), EXTRA
# more updates, then kill -9 (so the log since the last rewrite is
# replayed too). Each build then starts on its own copy of that store,
# alternating, ROUNDS times, and the "keys restored in" of its ready line
# is printed. CLEAN=1 stops GEN with SIGTERM instead (a clean shutdown
# rewrites the store: the fast case).
#
# Usage: bench/restore.sh GEN_BIN BIN [BIN...]
# Environment: ROUNDS (default 3), EXTRA (default 2000000), CLEAN=1
set -euo pipefail
gen=$1
shift
tmp=$(mktemp -d)
trap 'pkill -9 -f -- "--dir $tmp/" 2>/dev/null || true; rm -rf "$tmp"' EXIT

# gone pid: waits until the process has exited (it is not this shell's
# child: start runs in a command substitution).
gone() {
	while kill -0 "$1" 2>/dev/null; do sleep 0.05; done
}

start() { # bin dir log -> pid; waits for the ready line
	"$1" --port 0 --dir "$2" --threads 1 >"$3" 2>&1 &
	local pid=$!
	for _ in $(seq 1200); do
		grep -q "ready:" "$3" && break
		sleep 0.05
	done
	echo $pid
}

pid=$(start "$gen" "$tmp/src" "$tmp/log")
port=$(grep -oE 'listening on 127\.0\.0\.1:[0-9]+' "$tmp/log" | grep -oE '[0-9]+$')
redis-benchmark -p "$port" -c 50 -P 16 -n 3000000 -r 1000000 -q CL.TOKENBUCKET tb:__rand_int__ 100 1 1h >/dev/null
redis-benchmark -p "$port" -c 50 -P 16 -n "${EXTRA:-2000000}" -r 1000000 -q CL.TOKENBUCKET tb:__rand_int__ 100 1 1h >/dev/null
if [ "${CLEAN:-}" = 1 ]; then kill -TERM "$pid"; else kill -9 "$pid"; fi
gone "$pid"
echo "store: $(du -sm "$tmp/src" | cut -f1) MB"
for r in $(seq "${ROUNDS:-3}"); do
	for bin in "$@"; do
		rm -rf "$tmp/copy"
		cp -a "$tmp/src" "$tmp/copy"
		pid=$(start "$bin" "$tmp/copy" "$tmp/log2")
		echo "round $r $bin: $(grep -oE '[0-9]+ keys restored in [0-9.]+m?s' "$tmp/log2")"
		kill -9 "$pid"
		gone "$pid"
	done
done
