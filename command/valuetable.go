package command

import "strings"

// valueCommands are the Redis data commands' rows of the command table
// (strings, hashes, sorted sets, lists, and the expiry, rename and touch
// key commands), with Redis 7's arity, flags, ACL categories and key
// positions.
func valueCommands() []*Command {
	// d builds a row: flags and acl (the categories the flags do not
	// imply) are space-separated, keys the first, last and step of the key
	// positions (last 0: no keys).
	d := func(name string, arity int, flags, acl, group string, first, last, step int, summary, args string, run func(*Ctx, [][]byte)) *Command {
		c := &Command{Name: name, Arity: arity, Flags: strings.Fields(flags), ACL: strings.Fields(acl),
			Group: group, Since: "1.0.0", Complexity: "See Redis's documentation.", Summary: summary, Args: docArgs(args), Run: run}
		if first > 0 {
			access := "RW"
			if c.hasFlag("readonly") {
				access = "RO"
			}
			c.Keys = KeySpec{First: first, Last: last, Step: step, Flags: []string{access}}
		}
		return c
	}
	const (
		rf  = "readonly fast"
		wdf = "write denyoom fast"
		wd  = "write denyoom"
		wf  = "write fast"
		w   = "write"
		ro  = "readonly"
	)
	s, h, z, l, g := "string", "hash", "sorted_set", "list", "generic"
	touch := d("touch", -2, rf, "keyspace", g, 1, -1, 1, "Returns the number of existing keys out of those specified after updating the time they were last accessed.", "key...", cmdTouch)
	touch.Since, touch.Complexity = "3.2.1", "O(N) where N is the number of keys that will be touched."
	touch.Tips = []string{"request_policy:multi_shard", "response_policy:agg_sum"}
	return []*Command{
		d("get", 2, rf, "string", s, 1, 1, 1, "Returns the string value of a key.", "key", cmdGet),
		d("set", -3, wd, "string", s, 1, 1, 1, "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", "key value ?NX|XX ?GET ?EX=seconds|PX=milliseconds|EXAT=unix-time-seconds|PXAT=unix-time-milliseconds|KEEPTTL", cmdSet),
		d("setnx", 3, wdf, "string", s, 1, 1, 1, "Set the string value of a key only when the key doesn't exist.", "key value", cmdSetNX),
		d("setex", 4, wd, "string", s, 1, 1, 1, "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", "key seconds value", cmdSetEx),
		d("psetex", 4, wd, "string", s, 1, 1, 1, "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", "key milliseconds value", cmdSetEx),
		d("getset", 3, wdf, "string", s, 1, 1, 1, "Returns the previous string value of a key after setting it to a new value.", "key value", cmdGetSet),
		d("getdel", 2, wf, "string", s, 1, 1, 1, "Returns the string value of a key after deleting the key.", "key", cmdGetDel),
		d("getex", -2, wf, "string", s, 1, 1, 1, "Returns the string value of a key after setting its expiration time.", "key ?EX=seconds|PX=milliseconds|EXAT=unix-time-seconds|PXAT=unix-time-milliseconds|PERSIST", cmdGetEx),
		d("mget", -2, rf, "string", s, 1, -1, 1, "Atomically returns the string values of one or more keys.", "key...", cmdMGet),
		d("mset", -3, wd, "string", s, 1, -1, 2, "Atomically creates or modifies the string values of one or more keys.", "key+value...", cmdMSet),
		d("incr", 2, wdf, "string", s, 1, 1, 1, "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", "key", cmdIncr),
		d("decr", 2, wdf, "string", s, 1, 1, 1, "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", "key", cmdIncr),
		d("incrby", 3, wdf, "string", s, 1, 1, 1, "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", "key increment", cmdIncr),
		d("decrby", 3, wdf, "string", s, 1, 1, 1, "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", "key decrement", cmdIncr),
		d("incrbyfloat", 3, wdf, "string", s, 1, 1, 1, "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", "key increment", cmdIncrByFloat),
		d("append", 3, wdf, "string", s, 1, 1, 1, "Appends a string to the value of a key. Creates the key if it doesn't exist.", "key value", cmdAppend),
		d("strlen", 2, rf, "string", s, 1, 1, 1, "Returns the length of a string value.", "key", cmdLen),

		d("expire", -3, wf, "keyspace", g, 1, 1, 1, "Sets the expiration time of a key in seconds.", "key seconds ?NX|XX|GT|LT", cmdExpire),
		d("pexpire", -3, wf, "keyspace", g, 1, 1, 1, "Sets the expiration time of a key in milliseconds.", "key milliseconds ?NX|XX|GT|LT", cmdExpire),
		d("expireat", -3, wf, "keyspace", g, 1, 1, 1, "Sets the expiration time of a key to a Unix timestamp.", "key unix-time-seconds ?NX|XX|GT|LT", cmdExpire),
		d("pexpireat", -3, wf, "keyspace", g, 1, 1, 1, "Sets the expiration time of a key to a Unix milliseconds timestamp.", "key unix-time-milliseconds ?NX|XX|GT|LT", cmdExpire),
		d("persist", 2, wf, "keyspace", g, 1, 1, 1, "Removes the expiration time of a key.", "key", cmdPersist),
		d("expiretime", 2, rf, "keyspace", g, 1, 1, 1, "Returns the expiration time of a key as a Unix timestamp.", "key", cmdExpireTime),
		d("pexpiretime", 2, rf, "keyspace", g, 1, 1, 1, "Returns the expiration time of a key as a Unix milliseconds timestamp.", "key", cmdExpireTime),
		touch,
		d("rename", 3, w, "keyspace", g, 1, 2, 1, "Renames a key and overwrites the destination.", "key newkey", cmdRename),
		d("renamenx", 3, wf, "keyspace", g, 1, 2, 1, "Renames a key only when the target key name doesn't exist.", "key newkey", cmdRename),
		d("hget", 3, rf, "hash", h, 1, 1, 1, "Returns the value of a field in a hash.", "key field", cmdHGet),
		d("hset", -4, wdf, "hash", h, 1, 1, 1, "Creates or modifies the value of a field in a hash.", "key field+value...", cmdHSet),
		d("hmset", -4, wdf, "hash", h, 1, 1, 1, "Sets the values of multiple fields.", "key field+value...", cmdHSet),
		d("hsetnx", 4, wdf, "hash", h, 1, 1, 1, "Sets the value of a field in a hash only when the field doesn't exist.", "key field value", cmdHSetNX),
		d("hmget", -3, rf, "hash", h, 1, 1, 1, "Returns the values of all fields in a hash.", "key field...", cmdHMGet),
		d("hincrby", 4, wdf, "hash", h, 1, 1, 1, "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", "key field increment", cmdHIncrBy),
		d("hincrbyfloat", 4, wdf, "hash", h, 1, 1, 1, "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", "key field increment", cmdHIncrByFloat),
		d("hdel", -3, wf, "hash", h, 1, 1, 1, "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", "key field...", cmdHDel),
		d("hgetall", 2, ro, "hash", h, 1, 1, 1, "Returns all fields and values in a hash.", "key", cmdHGetAll),
		d("hkeys", 2, ro, "hash", h, 1, 1, 1, "Returns all fields in a hash.", "key", cmdHGetAll),
		d("hvals", 2, ro, "hash", h, 1, 1, 1, "Returns all values in a hash.", "key", cmdHGetAll),
		d("hexists", 3, rf, "hash", h, 1, 1, 1, "Determines whether a field exists in a hash.", "key field", cmdHExists),
		d("hlen", 2, rf, "hash", h, 1, 1, 1, "Returns the number of fields in a hash.", "key", cmdLen),

		d("zadd", -4, wdf, "sortedset", z, 1, 1, 1, "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", "key ?NX|XX ?GT|LT ?CH ?INCR score+member...", cmdZAdd),
		d("zincrby", 4, wdf, "sortedset", z, 1, 1, 1, "Increments the score of a member in a sorted set.", "key increment member", cmdZIncrBy),
		d("zrem", -3, wf, "sortedset", z, 1, 1, 1, "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", "key member...", cmdZRem),
		d("zcard", 2, rf, "sortedset", z, 1, 1, 1, "Returns the number of members in a sorted set.", "key", cmdLen),
		d("zcount", 4, rf, "sortedset", z, 1, 1, 1, "Returns the count of members in a sorted set that have scores within a range.", "key min max", cmdZCount),
		d("zscore", 3, rf, "sortedset", z, 1, 1, 1, "Returns the score of a member in a sorted set.", "key member", cmdZScore),
		d("zrange", -4, ro, "sortedset", z, 1, 1, 1, "Returns members in a sorted set within a range of indexes.", "key start stop ?BYSCORE|BYLEX ?REV ?LIMIT=offset+count ?WITHSCORES", cmdZRange),
		d("zrangebyscore", -4, ro, "sortedset", z, 1, 1, 1, "Returns members in a sorted set within a range of scores.", "key min max ?WITHSCORES ?LIMIT=offset+count", cmdZRange),
		d("zrevrangebyscore", -4, ro, "sortedset", z, 1, 1, 1, "Returns members in a sorted set within a range of scores in reverse order.", "key max min ?WITHSCORES ?LIMIT=offset+count", cmdZRange),
		d("zrevrange", -4, ro, "sortedset", z, 1, 1, 1, "Returns members in a sorted set within a range of indexes in reverse order.", "key start stop ?WITHSCORES", cmdZRange),
		d("zrangebylex", -4, ro, "sortedset", z, 1, 1, 1, "Returns members in a sorted set within a lexicographical range.", "key min max ?LIMIT=offset+count", cmdZRange),
		d("zrevrangebylex", -4, ro, "sortedset", z, 1, 1, 1, "Returns members in a sorted set within a lexicographical range in reverse order.", "key max min ?LIMIT=offset+count", cmdZRange),
		d("zrank", 3, rf, "sortedset", z, 1, 1, 1, "Returns the index of a member in a sorted set ordered by ascending scores.", "key member", cmdZRank),
		d("zrevrank", 3, rf, "sortedset", z, 1, 1, 1, "Returns the index of a member in a sorted set ordered by descending scores.", "key member", cmdZRank),
		d("zremrangebyscore", 4, w, "sortedset", z, 1, 1, 1, "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", "key min max", cmdZRemRange),
		d("zremrangebyrank", 4, w, "sortedset", z, 1, 1, 1, "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", "key start stop", cmdZRemRange),
		d("zpopmin", -2, wf, "sortedset", z, 1, 1, 1, "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", "key ?count", cmdZPopMin),

		d("lpush", -3, wdf, "list", l, 1, 1, 1, "Prepends one or more elements to a list. Creates the key if it doesn't exist.", "key element...", cmdPush),
		d("rpush", -3, wdf, "list", l, 1, 1, 1, "Appends one or more elements to a list. Creates the key if it doesn't exist.", "key element...", cmdPush),
		d("lpop", -2, wf, "list", l, 1, 1, 1, "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", "key ?count", cmdPop),
		d("rpop", -2, wf, "list", l, 1, 1, 1, "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", "key ?count", cmdPop),
		d("llen", 2, rf, "list", l, 1, 1, 1, "Returns the length of a list.", "key", cmdLen),
		d("lindex", 3, ro, "list", l, 1, 1, 1, "Returns an element from a list by its index.", "key index", cmdLIndex),
		d("lrange", 4, ro, "list", l, 1, 1, 1, "Returns a range of elements from a list.", "key start stop", cmdLRange),
		d("ltrim", 4, w, "list", l, 1, 1, 1, "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", "key start stop", cmdLTrim),
		objectCommand(),
		d("lrem", 4, w, "list", l, 1, 1, 1, "Removes elements from a list. Deletes the list if the last element was removed.", "key count element", cmdLRem),
	}
}

// docArgs builds COMMAND DOCS arguments from a compact form: words
// separated by spaces; a word ending in "key" is a key; "?" makes it
// optional and "..." multiple; "a|b" is a choice of tokens (upper case)
// or token=value pairs; "key+value" a block of both.
func docArgs(spec string) []Arg {
	var out []Arg
	for _, w := range strings.Fields(spec) {
		optional := strings.HasPrefix(w, "?")
		w = strings.TrimPrefix(w, "?")
		multiple := strings.HasSuffix(w, "...")
		w = strings.TrimSuffix(w, "...")
		var a Arg
		switch {
		case strings.Contains(w, "|"):
			var alts []Arg
			for _, alt := range strings.Split(w, "|") {
				alts = append(alts, docArg(alt))
			}
			a = oneof(strings.ToLower(strings.Split(w, "|")[0]), alts...)
		case strings.Contains(w, "+"):
			var parts []Arg
			for _, part := range strings.Split(w, "+") {
				parts = append(parts, docArg(part))
			}
			a = block("data", parts...)
		default:
			a = docArg(w)
		}
		a.Optional, a.Multiple = optional, multiple
		out = append(out, a)
	}
	return out
}

func docArg(w string) Arg {
	tok, val, isPair := strings.Cut(w, "=")
	switch {
	case isPair:
		return tokenArg(tok, argStr(val))
	case strings.ToUpper(w) == w:
		return token(w)
	case strings.HasSuffix(w, "key"):
		return argKey(w)
	}
	return argStr(w)
}
