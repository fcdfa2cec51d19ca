package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/rlserver/rlserver/command"
)

// cliFlags are the flags that make rlserver do something other than
// serve: --version, --healthcheck and --help. They are read from the
// command line only, never from RLSERVER_* variables: an environment
// meant for the server must not turn it into a health check.
type cliFlags struct {
	version     bool
	healthcheck bool
	help        bool
	fs          *flag.FlagSet // every flag, for --help
}

// register adds the flags to fs, after the environment has been applied.
// It also silences the flag package's own output: run prints a bad
// flag's error once, and --help prints to stdout.
func (c *cliFlags) register(fs *flag.FlagSet) {
	c.fs = fs
	fs.BoolVar(&c.version, "version", false, "print the version and exit")
	fs.BoolVar(&c.healthcheck, "healthcheck", false, "exit 0 if a server on --bind/--port answers PING (AUTH with --masteruser/--masterauth or --requirepass), 1 if not")
	fs.BoolVar(&c.help, "help", false, "print this help and exit")
	fs.BoolVar(&c.help, "h", false, "print this help and exit")
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
}

// any reports whether one of the flags was given; then no other flag is
// checked, and run does what it asks instead of serving.
func (c *cliFlags) any() bool { return c.version || c.healthcheck || c.help }

// run does what the flags ask and returns the exit code.
func (c *cliFlags) run(o *options) int {
	switch {
	case c.help:
		c.usage(os.Stdout)
		return 0
	case c.version:
		fmt.Println(versionLine())
		return 0
	default:
		return healthcheck(o, os.Stdout, os.Stderr)
	}
}

// versionLine is what --version prints: the version, and the commit and
// Go release it was built from when the build recorded them
// ("rlserver 0.1.0 (commit 4bca3de1a2b3, go1.26.8 linux/amd64)").
func versionLine() string {
	var extra []string
	if info, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			extra = append(extra, "commit "+rev+dirty)
		}
	}
	extra = append(extra, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return fmt.Sprintf("rlserver %s (%s)", command.Version, strings.Join(extra, ", "))
}

// envName is the RLSERVER_* variable that sets flag name.
func envName(name string) string {
	return "RLSERVER_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// usage writes --help: how to call rlserver, then every flag with its
// default and the environment variable that sets it.
func (c *cliFlags) usage(w io.Writer) {
	fmt.Fprint(w, `Usage:
  rlserver [flags]                 serve (127.0.0.1:6379, state under ./data)
  rlserver --version               print the version
  rlserver --healthcheck [flags]   exit 0 if the server on --bind/--port answers PING, 1 if not
  rlserver --help                  this help

Every flag can also be set by the environment variable named beside it
(upper case, dashes as underscores); the command line wins. --version,
--healthcheck and --help are read from the command line only.

Flags:
`)
	var flags []*flag.Flag
	c.fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	for _, f := range flags {
		switch f.Name {
		case "version", "healthcheck", "help", "h":
			continue
		}
		kind, text := flag.UnquoteUsage(f)
		head := "  --" + f.Name
		if kind != "" {
			head += " " + kind
		}
		fmt.Fprintf(w, "%-40s %s\n", head, envName(f.Name))
		fmt.Fprintf(w, "        %s", text)
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
			fmt.Fprintf(w, " (default %q)", f.DefValue)
		}
		fmt.Fprintln(w)
	}
}
