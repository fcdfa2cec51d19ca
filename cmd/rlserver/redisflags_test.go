package main

import (
	"reflect"
	"testing"
)

// Redis's command-line forms parse as Redis reads them.
func TestRedisFlagForms(t *testing.T) {
	for _, c := range []struct {
		args  []string
		debug string
		bind  string
	}{
		{[]string{"--enable-debug-command"}, "yes", "127.0.0.1"},
		{[]string{"--enable-debug-command", "yes"}, "yes", "127.0.0.1"},
		{[]string{"--enable-debug-command", "LOCAL", "--port", "0"}, "local", "127.0.0.1"},
		{[]string{"--enable-debug-command=no"}, "no", "127.0.0.1"},
		{[]string{"--bind", "127.0.0.1", "-::1", "--port", "0"}, "no", "127.0.0.1 -::1"},
		{[]string{"--bind", "127.0.0.1  ::1"}, "no", "127.0.0.1 ::1"},
		{[]string{"-bind", "* -::*", "-port", "0"}, "no", "* -::*"},
	} {
		o, err := parseOptions(c.args)
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if o.enableDebug.String() != c.debug || o.bind != c.bind {
			t.Errorf("%q: enable-debug-command %q, bind %q; want %q, %q", c.args, o.enableDebug.String(), o.bind, c.debug, c.bind)
		}
	}
	for _, args := range [][]string{
		{"--enable-debug-command", "maybe"}, {"--protected-mode", "1"}, {"--tls-auth-clients", "sometimes"},
		{"--appendfsync", "never"}, {"--bind", ""}, {"--cluster-node-timeout", "-1"}, {"--busy-reply-threshold", "-1"},
	} {
		if _, err := parseOptions(args); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	o, err := parseOptions([]string{"--protected-mode", "NO", "--appendfsync", "Always", "--tls-auth-clients", "Optional"})
	if err != nil || o.protected != "no" || o.appendfsync != "always" || o.tlsAuthClients != "optional" {
		t.Errorf("case-insensitive values: %+v, %v", o, err)
	}
}

func TestBindAddrs(t *testing.T) {
	got := bindAddrs(" 127.0.0.1 -::1 * -::* ")
	want := []bindAddr{{"127.0.0.1", false}, {"::1", true}, {"0.0.0.0", false}, {"::", true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("bindAddrs = %v, want %v", got, want)
	}
}

// TestEventLoops: one event loop fewer than threads, at least one, with
// persistence on or off, unless --event-loops says.
func TestEventLoops(t *testing.T) {
	for _, tc := range []struct {
		o    *options
		want int
	}{
		{&options{io: "epoll", threads: 2, dir: "data"}, 1},
		{&options{io: "epoll", threads: 2, dir: ""}, 1},
		{&options{io: "epoll", threads: 4, dir: ""}, 3},
		{&options{io: "epoll", threads: 1, dir: ""}, 1},
		{&options{io: "epoll", threads: 1, dir: "data"}, 1},
		{&options{io: "epoll", threads: 8, dir: "data"}, 7},
		{&options{io: "epoll", threads: 2, dir: "data", loops: 2}, 2},
		{&options{io: "goroutines", threads: 2, dir: "data"}, 0},
	} {
		if got := eventLoops(tc.o); got != tc.want {
			t.Errorf("threads %d dir %q loops %d io %s: %d event loops, want %d", tc.o.threads, tc.o.dir, tc.o.loops, tc.o.io, got, tc.want)
		}
	}
}
