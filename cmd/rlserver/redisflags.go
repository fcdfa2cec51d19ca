package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// redisBool is a flag that takes Redis's yes/no (and local, for
// enable-debug-command) as well as Go's true/false, case-insensitively;
// given alone it means yes.
type redisBool struct {
	on  bool
	val string // as Redis reads it back: yes, no or local
}

func (b *redisBool) String() string {
	if b.val == "" {
		return "no"
	}
	return b.val
}

func (b *redisBool) Set(s string) error {
	switch strings.ToLower(s) {
	case "yes", "true", "1":
		b.on, b.val = true, "yes"
	case "no", "false", "0":
		b.on, b.val = false, "no"
	case "local":
		b.on, b.val = true, "local"
	default:
		return fmt.Errorf("must be yes, no or local")
	}
	return nil
}

// IsBoolFlag lets the flag stand alone.
func (b *redisBool) IsBoolFlag() bool { return true }

// joinBoolValues returns args with each redisBool flag followed by a
// yes/no value (--enable-debug-command yes, as Redis's command line
// takes it) joined into one argument (--enable-debug-command=yes): Go's
// flag package takes a boolean flag's value only after '='.
func joinBoolValues(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		if a == "--" || !strings.HasPrefix(a, "-") {
			if a == "--" {
				return append(out, args[i+1:]...)
			}
			continue
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") || i+1 == len(args) {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if _, ok := f.Value.(*redisBool); !ok {
			if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !bf.IsBoolFlag() {
				i++ // a value flag's value, whatever it looks like, is not a flag
				out = append(out, args[i])
			}
			continue
		}
		switch strings.ToLower(args[i+1]) {
		case "yes", "no", "local", "true", "false", "1", "0":
			out[len(out)-1] = a + "=" + args[i+1]
			i++
		}
	}
	return out
}

// bindAddr is one address of Redis's bind list.
type bindAddr struct {
	host     string
	optional bool // written with a leading '-': skipped if it cannot be bound
}

// bindAddrs reads --bind as Redis reads bind: addresses separated by
// spaces, "*" for every IPv4 address, "::*" for every IPv6 one, and a
// leading '-' for one that may be unavailable on this host.
func bindAddrs(s string) []bindAddr {
	var out []bindAddr
	for _, f := range strings.Fields(s) {
		a := bindAddr{host: f}
		if strings.HasPrefix(f, "-") {
			a = bindAddr{host: f[1:], optional: true}
		}
		switch a.host {
		case "*":
			a.host = "0.0.0.0"
		case "::*":
			a.host = "::"
		}
		out = append(out, a)
	}
	return out
}

// joinBindValues returns args with the addresses after --bind joined into
// its one value, as Redis's command line takes "--bind 127.0.0.1 -::1":
// the arguments that follow, up to one starting with "--" or naming a
// flag, are more addresses.
func joinBindValues(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if a != "--bind" && a != "-bind" || i+1 == len(args) {
			continue
		}
		i++
		v := args[i]
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") && fs.Lookup(strings.TrimLeft(args[i+1], "-")) == nil &&
			strings.TrimLeft(args[i+1], "-") != "" {
			i++
			v += " " + args[i]
		}
		out = append(out, v)
	}
	return out
}

// aclFileNamesDefault reports whether the ACL file at path has a line for
// the default user.
func aclFileNamesDefault(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "user" && f[1] == "default" {
			return true
		}
	}
	return false
}
