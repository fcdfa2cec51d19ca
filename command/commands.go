package command

import "slices"

// commandTable is rlserver's one command table. Dispatch, the arity error,
// COMMAND INFO/DOCS/LIST and the key positions that cluster routing will use
// are all read from it.
func commandTable() []*Command {
	const rw, ro = "RW", "RO"
	// A limiter's most arguments are its name plus every documented one
	// (a token argument counts twice: token and value).
	limiter := func(name string, arity int, summary string, args ...Arg) *Command {
		max := 1
		for _, a := range args {
			max++
			if a.Token != "" && a.Type != "pure-token" {
				max++
			}
		}
		if arity > 0 {
			max = 0
		}
		return &Command{
			Name: name, Arity: arity, MaxArgs: max, Flags: []string{"write", "denyoom", "fast"},
			ACL: []string{"ratelimit"}, Keys: KeySpec{First: 1, Last: 1, Step: 1, Flags: []string{rw, "ACCESS", "UPDATE"}},
			Group: "ratelimit", Since: "0.1.0", Complexity: "O(1)", Summary: summary, Args: args,
		}
	}
	cost := opt(argInt("n"))
	cmds := []*Command{
		// Limiters.
		with(limiter("cl.throttle", -5, "Rate limits a key with GCRA, redis-cell compatible: [limited, limit, remaining, retry_after_s, reset_after_s].",
			argKey("key"), argInt("max_burst"), argInt("count_per_period"), argStr("period"), opt(argInt("quantity"))), cmdThrottle),
		with(limiter("gcra", -5, "Rate limits a key with GCRA; period in (fractional) seconds.",
			argKey("key"), argInt("max_burst"), argInt("tokens_per_period"), Arg{Name: "period", Type: "double"}, opt(tokenArg("TOKENS", argInt("count")))), cmdGCRA),
		with(limiter("cl.tokenbucket", -5, "Token bucket with continuous refill and optional reservations.",
			argKey("key"), argInt("capacity"), argInt("rate"), argStr("period"), cost, opt(tokenArg("RESERVE", argStr("max_wait")))), cmdTokenBucket),
		with(limiter("cl.leakybucket", -5, "Leaky bucket as a queue: admitted work leaves at a constant rate.",
			argKey("key"), argInt("capacity"), argInt("rate"), argStr("period"), cost), cmdLeakyBucket),
		with(limiter("cl.window", -4, "Fixed, sliding-counter or sliding-log window limit.",
			argKey("key"), argInt("limit"), argStr("window"), cost, opt(oneof("mode", token("FIXED"), token("SLIDING"), token("LOG")))), cmdWindow),
		with(limiter("cl.acquire", -4, "Acquires a concurrency lease that expires on its own.",
			argKey("key"), argInt("limit"), argStr("lease"), cost), cmdAcquire),
		noDecision(with(limiter("cl.release", 3, "Returns a concurrency lease's units.", argKey("key"), argStr("lease_id")), cmdRelease)),
		noDecision(with(limiter("cl.renew", 4, "Extends a concurrency lease.", argKey("key"), argStr("lease_id"), argStr("lease")), cmdRenew)),
		{
			Name: "cl.all", Arity: -6, Flags: []string{"write", "denyoom"}, ACL: []string{"ratelimit"},
			Keys:  KeySpec{First: 3, Last: 3, Step: 1, Flags: []string{rw, "ACCESS", "UPDATE"}, Movable: true, Find: allKeys},
			Group: "ratelimit", Since: "0.1.0", Complexity: "O(N) where N is the number of rules",
			Summary: "Checks and consumes several limits atomically, all or nothing.",
			Args: []Arg{argInt("numrules"), many(block("rule", argStr("kind"), argKey("key"), many(argStr("param")))),
				opt(tokenArg("COST", argInt("n")))},
			Run: cmdAll,
		},

		// Connection.
		conn("ping", -1, "Returns the server's liveness response.", cmdPing, opt(argStr("message"))),
		conn("echo", 2, "Returns the given string.", cmdEcho, argStr("message")),
		with(&Command{Name: "hello", Arity: -1, Flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"},
			ACL: []string{"connection"}, Group: "connection", Since: "6.0.0", Complexity: "O(1)",
			Summary: "Handshakes with the server: protocol version, authentication, client name.",
			Args: []Arg{opt(block("arguments", argInt("protover"), opt(block("auth", token("AUTH"), argStr("username"), argStr("password"))),
				opt(tokenArg("SETNAME", argStr("clientname")))))}}, cmdHello),
		with(&Command{Name: "auth", Arity: -2, Flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"},
			ACL: []string{"connection"}, Group: "connection", Since: "1.0.0", Complexity: "O(N) where N is the number of passwords",
			Summary: "Authenticates the connection.", Args: []Arg{opt(argStr("username")), argStr("password")}}, cmdAuth),
		conn("select", 2, "Changes the selected database (only 0 exists).", cmdSelect, argInt("index")),
		with(&Command{Name: "quit", Arity: -1, Flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy", "no_multi_queue"},
			ACL: []string{"connection"}, Group: "connection", Since: "1.0.0", Complexity: "O(1)", Summary: "Closes the connection."}, cmdQuit),
		with(&Command{Name: "reset", Arity: 1, Flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy", "no_multi_queue"},
			ACL: []string{"connection"}, Group: "connection", Since: "6.2.0", Complexity: "O(1)", Summary: "Resets the connection."}, cmdReset),
		container("client", "connection", "A container for client connection commands.", inCategory("connection",
			sub("client|id", 2, "Returns the unique client ID of the connection.", cmdClientID),
			sub("client|setname", 3, "Sets the connection name.", cmdClientSetName, argStr("connection-name")),
			sub("client|getname", 2, "Returns the name of the connection.", cmdClientGetName),
			sub("client|setinfo", 4, "Sets information specific to the client or connection.", cmdClientSetInfo,
				oneof("attr", tokenArg("LIB-NAME", argStr("libname")), tokenArg("LIB-VER", argStr("libver")))),
			sub("client|tracking", -3, "Controls server-assisted client-side caching for the connection (accepted in OPTIN mode; caching itself is refused).", cmdClientTracking,
				oneof("status", token("ON"), token("OFF")), opt(tokenArg("REDIRECT", argInt("client-id"))), opt(many(tokenArg("PREFIX", argStr("prefix")))),
				opt(token("BCAST")), opt(token("OPTIN")), opt(token("OPTOUT")), opt(token("NOLOOP"))),
			setsCaching(sub("client|caching", 3, "Instructs the server whether to track the keys in the next request (YES is refused: see CLIENT TRACKING).", cmdClientCaching,
				oneof("mode", token("YES"), token("NO")))),
			sub("client|getredir", 2, "Returns the client ID to which the connection's tracking notifications are redirected.", cmdClientGetRedir),
			sub("client|info", 2, "Returns information about the connection.", cmdClientInfo),
			withFlags(sub("client|list", -2, "Lists open connections.", cmdClientList,
				opt(tokenArg("TYPE", oneof("client-type", token("NORMAL")))), opt(tokenArg("ID", many(argInt("client-id"))))), "admin"),
		)...),

		// Transactions.
		txn("multi", "Starts a transaction.", cmdMulti),
		// EXEC runs the queue: not fast (Redis's @slow).
		runsQueue(withoutFlag(txn("exec", "Executes all commands in a transaction, atomically.", cmdExec), "fast")),
		txn("discard", "Discards a transaction.", cmdDiscard),

		// Introspection and server.
		with(&Command{Name: "command", Arity: -1, Flags: []string{"loading", "stale"}, ACL: []string{"connection"},
			Group: "server", Since: "2.8.13", Complexity: "O(N) where N is the total number of commands",
			Summary: "Returns detailed information about all commands.",
			Subs: inCategory("connection",
				sub("command|count", 2, "Returns a count of commands.", cmdCommandCount),
				sub("command|info", -2, "Returns information about one, multiple or all commands.", cmdCommandInfo, opt(many(argStr("command-name")))),
				sub("command|docs", -2, "Returns documentary information about one, multiple or all commands.", cmdCommandDocs, opt(many(argStr("command-name")))),
				sub("command|getkeys", -4, "Extracts the key names from an arbitrary command.", cmdCommandGetKeys, argStr("command"), many(argStr("arg"))),
				sub("command|getkeysandflags", -4, "Extracts the key names and access flags for an arbitrary command.", cmdCommandGetKeysAndFlags,
					argStr("command"), many(argStr("arg"))),
				sub("command|list", -2, "Returns a list of command names.", cmdCommandList,
					opt(tokenArg("FILTERBY", oneof("filterby", tokenArg("MODULE", argStr("module-name")), tokenArg("ACLCAT", argStr("category")), tokenArg("PATTERN", argStr("pattern")))))),
			)}, cmdCommand),
		// INFO, TIME, DBSIZE (and LASTSAVE): Redis's categories and the flags
		// they follow from; scripts may call them (sliding-window scripts read TIME).
		setFlags(server("info", -1, "Returns information and statistics about the server.", cmdInfo, opt(many(argStr("section")))),
			nil, "dangerous"),
		setFlags(server("time", 1, "Returns the server time.", cmdTime), []string{"fast"}),
		setFlags(server("dbsize", 1, "Returns the number of keys in the database.", cmdDBSize), []string{"readonly", "fast"}, "keyspace"),
		aclContainer(),
		clusterContainer(),
		rlreplContainer(),
		rlsContainer(),
		clusterOnly("readonly", "Enables read-only queries for a connection to a Redis Cluster replica node.", cmdReadOnly),
		clusterOnly("readwrite", "Enables read-write queries for a connection to a Redis Cluster replica node.", cmdReadWrite),
		clusterOnly("asking", "Signals that a cluster client is following an -ASK redirect.", cmdAsking),
		with(&Command{Name: "role", Arity: 1, Flags: []string{"noscript", "loading", "stale", "fast"}, ACL: []string{"admin", "dangerous"},
			Group: "server", Since: "2.8.12", Complexity: "O(1)", Summary: "Returns the replication role."}, cmdRole),
		with(&Command{Name: "wait", Arity: 3, Flags: []string{"noscript"}, ACL: []string{"connection"},
			Group: "generic", Since: "3.0.0", Complexity: "O(1)",
			Summary: "Blocks until the changes made before it by every connection reached the given number of replicas.",
			Args:    []Arg{argInt("numreplicas"), argInt("timeout")}}, cmdWait),
		container("config", "server", "A container for server configuration commands.",
			withFlags(sub("config|get", -3, "Returns the effective values of configuration parameters.", cmdConfigGet, many(argStr("parameter"))), "admin"),
			withFlags(sub("config|set", -4, "Sets configuration parameters in-flight.", cmdConfigSet, many(block("data", argStr("parameter"), argStr("value")))), "admin"),
			withFlags(sub("config|resetstat", 2, "Resets the server's statistics.", cmdConfigResetStat), "admin"),
		),
		container("slowlog", "server", "A container for slow log commands.",
			admin(&Command{Name: "slowlog|get", Arity: -2, MaxArgs: 3, Summary: "Returns the slow log's entries, newest first.",
				Complexity: "O(N) where N is the number of entries returned", Args: []Arg{opt(argInt("count"))}}, cmdSlowlogGet),
			admin(&Command{Name: "slowlog|len", Arity: 2, Summary: "Returns the number of entries in the slow log."}, cmdSlowlogLen),
			admin(&Command{Name: "slowlog|reset", Arity: 2, Summary: "Clears all entries from the slow log.",
				Complexity: "O(N) where N is the number of entries in the slowlog"}, cmdSlowlogReset),
		),
		container("latency", "server", "A container for latency diagnostics commands.",
			admin(&Command{Name: "latency|latest", Arity: 2, Summary: "Returns the latest latency samples for all events."}, cmdLatencyLatest),
			admin(&Command{Name: "latency|history", Arity: 3, Summary: "Returns timestamp-latency samples for an event.",
				Args: []Arg{argStr("event")}}, cmdLatencyHistory),
			admin(&Command{Name: "latency|reset", Arity: -2, Summary: "Resets the latency data for one or more events.",
				Args: []Arg{opt(many(argStr("event")))}}, cmdLatencyReset),
			admin(&Command{Name: "latency|histogram", Arity: -2, Summary: "Returns the cumulative distribution of latencies of a subset or all commands.",
				Complexity: "O(N) where N is the number of commands with latency information being retrieved.",
				Args:       []Arg{opt(many(argStr("command")))}}, cmdLatencyHistogram),
		),
		noMulti(server("save", 1, "Synchronously saves the keyspace to disk.", cmdSave)),
		server("bgsave", -1, "Asynchronously saves the keyspace to disk.", cmdBGSave, opt(token("SCHEDULE"))),
		with(&Command{Name: "checkpoint", Arity: 2, Flags: []string{"admin", "noscript", "no_multi"},
			Group: "server", Since: "0.1.0", Complexity: "O(N) where N is the size of the store",
			Summary: "Flushes, then writes a consistent copy of the store (a Pebble checkpoint) to a new directory.",
			Args:    []Arg{argStr("directory")}}, cmdCheckpoint),
		setFlags(server("lastsave", 1, "Returns the Unix timestamp of the last successful save to disk.", cmdLastSave), []string{"fast"}, "admin", "dangerous"),
		allowBusy(noMulti(server("shutdown", -1, "Synchronously saves the keyspace to disk and shuts down the server.", cmdShutdown,
			opt(oneof("save-selector", token("NOSAVE"), token("SAVE"))), opt(token("NOW")), opt(token("FORCE"))))),
		container("memory", "server", "A container for memory diagnostics commands.",
			sub("memory|purge", 2, "Collects garbage and returns free memory to the operating system.", cmdMemoryPurge),
			with(&Command{Name: "memory|usage", Arity: -3, Flags: []string{"readonly"},
				Keys:  KeySpec{First: 2, Last: 2, Step: 1, Flags: []string{ro}},
				Group: "server", Since: "4.0.0", Complexity: "O(1)",
				Summary: "Estimates the memory usage of a key.",
				Args:    []Arg{argKey("key"), opt(tokenArg("SAMPLES", argInt("count")))}}, cmdMemoryUsage),
		),
		// DEBUG is @admin, as Redis's; so are its subcommands.
		withFlags(container("debug", "server", "Tests only: drives the server clock and injects disk faults (needs --enable-debug-command).",
			withFlags(sub("debug|clock", -3, "Sets, advances, reads or releases the server clock.", cmdDebugClock,
				oneof("op", tokenArg("SET", argInt("unix-ms")), tokenArg("ADVANCE", argInt("ms")), token("REAL"), token("GET"))), "admin"),
			withFlags(sub("debug|diskfault", 3, "Makes every flush to disk fail with an OS error, as a disk fault would, or stops it.", cmdDebugDiskFault,
				oneof("fault", token("ENOSPC"), token("EACCES"), token("EROFS"), token("ENOENT"), token("OFF"))), "admin")), "admin"),

		// Keyspace.
		keyCmd("exists", -2, "Determines whether one or more keys exist.", cmdExists, []string{"readonly", "fast"}, ro, many(argKey("key"))),
		keyCmd("del", -2, "Deletes one or more keys.", cmdDel, []string{"write"}, "RM", many(argKey("key"))),
		keyCmd("unlink", -2, "Deletes one or more keys.", cmdDel, []string{"write", "fast"}, "RM", many(argKey("key"))),
		keyCmd("type", 2, "Determines the type of value stored at a key (the limiter kind).", cmdType, []string{"readonly", "fast"}, ro, argKey("key")),
		keyCmd("ttl", 2, "Returns the expiration time in seconds of a key.", cmdTTL, []string{"readonly", "fast"}, ro, argKey("key")),
		keyCmd("pttl", 2, "Returns the expiration time in milliseconds of a key.", cmdPTTL, []string{"readonly", "fast"}, ro, argKey("key")),
		with(&Command{Name: "scan", Arity: -2, Flags: []string{"readonly"}, ACL: []string{"keyspace"},
			Group: "generic", Since: "2.8.0", Complexity: "O(1) for every call. O(N) for a complete iteration.",
			Summary: "Iterates over the key names in the database.",
			Args:    []Arg{argInt("cursor"), opt(tokenArg("MATCH", argStr("pattern"))), opt(tokenArg("COUNT", argInt("count"))), opt(tokenArg("TYPE", argStr("type")))}}, cmdScan),
		with(&Command{Name: "keys", Arity: 2, Flags: []string{"readonly"}, ACL: []string{"keyspace", "dangerous"},
			Group: "generic", Since: "1.0.0", Complexity: "O(N) with N being the number of keys in the database",
			Summary: "Returns all key names that match a pattern.", Args: []Arg{argStr("pattern")}}, cmdKeys),
		flushCmd("flushdb", "Removes all keys from the current database."),
		flushCmd("flushall", "Removes all keys from all databases."),
	}
	cmds = append(cmds, valueCommands()...)
	return append(cmds, scriptingCommands()...)
}

// noMulti marks a command that flushes to disk (taking every shard lock in
// turn): inside MULTI it would wait for the locks EXEC holds.
func noMulti(c *Command) *Command {
	c.Flags = append(c.Flags, "no_multi")
	return c
}

// allowBusy lets c run while a script is busy (its handler decides what
// it then refuses: SHUTDOWN without NOSAVE).
func allowBusy(c *Command) *Command {
	c.Flags = append(c.Flags, "allow_busy")
	return c
}

// admin completes a subcommand of SLOWLOG or LATENCY as Redis flags them.
func admin(c *Command, run func(*Ctx, [][]byte)) *Command {
	c.Flags = []string{"admin", "noscript", "loading", "stale"}
	c.Group, c.Since = "server", "2.2.12"
	if c.Complexity == "" {
		c.Complexity = "O(1)"
	}
	return with(c, run)
}

// noDecision, runsQueue and setsCaching set the flags of their names (see
// Command).
func noDecision(c *Command) *Command  { c.NoDecision = true; return c }
func runsQueue(c *Command) *Command   { c.RunsQueue = true; return c }
func setsCaching(c *Command) *Command { c.SetsCaching = true; return c }

func with(c *Command, run func(*Ctx, [][]byte)) *Command {
	c.Run = run
	return c
}

func conn(name string, arity int, summary string, run func(*Ctx, [][]byte), args ...Arg) *Command {
	return &Command{Name: name, Arity: arity, Flags: []string{"fast"}, ACL: []string{"connection"},
		Group: "connection", Since: "1.0.0", Complexity: "O(1)", Summary: summary, Args: args, Run: run}
}

func server(name string, arity int, summary string, run func(*Ctx, [][]byte), args ...Arg) *Command {
	return &Command{Name: name, Arity: arity, Flags: []string{"admin", "noscript"},
		Group: "server", Since: "1.0.0", Complexity: "O(1)", Summary: summary, Args: args, Run: run}
}

// setFlags replaces the flags and categories a helper gave c.
func setFlags(c *Command, flags []string, acl ...string) *Command {
	c.Flags, c.ACL = flags, acl
	return c
}

// withFlags adds flags to c.
func withFlags(c *Command, flags ...string) *Command {
	c.Flags = append(c.Flags, flags...)
	return c
}

// withoutFlag removes flag from c's flags.
func withoutFlag(c *Command, flag string) *Command {
	c.Flags = slices.DeleteFunc(c.Flags, func(f string) bool { return f == flag })
	return c
}

// inCategory adds cat to the categories of cmds.
func inCategory(cat string, cmds ...*Command) []*Command {
	for _, c := range cmds {
		c.ACL = append(c.ACL, cat)
	}
	return cmds
}

func txn(name, summary string, run func(*Ctx, [][]byte)) *Command {
	return &Command{Name: name, Arity: 1, Flags: []string{"noscript", "loading", "stale", "fast", "allow_busy", "no_multi_queue"},
		ACL: []string{"transaction"}, Group: "transactions", Since: "1.2.0", Complexity: "O(1)", Summary: summary, Run: run}
}

func keyCmd(name string, arity int, summary string, run func(*Ctx, [][]byte), flags []string, access string, args ...Arg) *Command {
	last := 1
	if arity < 0 {
		last = -1
	}
	return &Command{Name: name, Arity: arity, Flags: flags, ACL: []string{"keyspace"},
		Keys:  KeySpec{First: 1, Last: last, Step: 1, Flags: []string{access}},
		Group: "generic", Since: "1.0.0", Complexity: "O(1) per key", Summary: summary, Args: args, Run: run}
}

func flushCmd(name, summary string) *Command {
	return &Command{Name: name, Arity: -1, Flags: []string{"write"}, ACL: []string{"keyspace", "dangerous"},
		Group: "server", Since: "1.0.0", Complexity: "O(N) where N is the total number of keys", Summary: summary,
		Args: []Arg{opt(oneof("flush-type", token("ASYNC"), token("SYNC")))}, Run: cmdFlush}
}

func container(name, group, summary string, subs ...*Command) *Command {
	return &Command{Name: name, Arity: -2, Group: group, Since: "1.0.0",
		Complexity: "Depends on subcommand.", Summary: summary, Subs: subs}
}

func sub(name string, arity int, summary string, run func(*Ctx, [][]byte), args ...Arg) *Command {
	return &Command{Name: name, Arity: arity, Flags: []string{"loading", "stale", "noscript"},
		Group: "server", Since: "1.0.0", Complexity: "O(1)", Summary: summary, Args: args, Run: run}
}
