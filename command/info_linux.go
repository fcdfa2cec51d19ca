package command

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// osName is INFO's os: the kernel's name, release and machine, as Redis's.
func osName() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return "Linux"
	}
	return cstr(u.Sysname[:]) + " " + cstr(u.Release[:]) + " " + cstr(u.Machine[:])
}

// cstr returns the NUL-terminated string in a (int8 or uint8 by platform).
func cstr[T int8 | uint8](a []T) string {
	b := make([]byte, 0, len(a))
	for _, c := range a {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

func multiplexingAPI() string { return "epoll" }

// residentBytes returns the process's resident set size (0: unknown).
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// totalSystemMemory returns the machine's memory (0: unknown).
func totalSystemMemory() int64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
