# bench/lib.sh: helpers the benchmark scripts source.

cpu_ns() { # pid: total CPU ns of every thread of the process (schedstat)
	local t=0 v
	for f in /proc/$1/task/*/schedstat; do
		read -r v _ <"$f" && t=$((t + v))
	done
	echo $t
}

med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; } # median of stdin's numbers
