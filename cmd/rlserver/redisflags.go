package main

import (
	"flag"
	"fmt"
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
