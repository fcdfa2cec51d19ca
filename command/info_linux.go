package command

import (
	"os"
	"strconv"
	"strings"
	"sync"
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

// statm is /proc/self/statm, kept open: a read at offset 0 regenerates it,
// so each INFO costs one pread instead of an open, a read and a close.
var statm = sync.OnceValue(func() *os.File {
	f, _ := os.Open("/proc/self/statm")
	return f
})

// residentBytes returns the process's resident set size (0: unknown).
func residentBytes() int64 {
	f := statm()
	if f == nil {
		return 0
	}
	var buf [128]byte
	n, _ := f.ReadAt(buf[:], 0)
	fields := strings.Fields(string(buf[:n]))
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
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
