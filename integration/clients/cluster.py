#!/usr/bin/python3
"""Runs commands through redis-py's cluster client, redis.cluster.RedisCluster.

Usage: /usr/bin/python3 cluster.py SEED_HOST:SEED_PORT < commands.json

Standard input is a JSON array of commands, each an array of strings, such
as ["SET","k1","v"] or ["CL.THROTTLE","user:{a}","10","20","60"]. They run
in order through one RedisCluster client that knows only the seed; standard
output is one JSON array with the reply to each command: integers as
numbers, bulk and status strings as strings, nil as null, arrays as arrays,
and {"error": "<message>"} for an error reply. An error that the library
raises itself, before or instead of a server reply (say, keys in two slots,
or a command that the server's COMMAND reply does not list), is reported
the same way, with the library's message; any other exception the library
raises for a command is reported as {"error": "<type>: <message>"}. A command that the library sends
to several nodes and merges itself (PING to all nodes gives true, FLUSHALL
to every primary gives an object of each node's reply) gives what the
library returns.

The client routes a command by its keys, which it finds from the server's
COMMAND reply (key positions, or COMMAND GETKEYS for movable keys); it
follows -MOVED and -ASK redirections. Replies are taken as the server sent
them: redis-py's reply callbacks (SET -> True, and so on) are bypassed.

Exits non-zero only when the input is not such an array or the client
cannot connect to the cluster.
"""

import json
import logging
import sys

import redis
import redis.cluster
from redis.exceptions import RedisClusterException, RedisError, ResponseError

RAW = "_rlserver_raw"


class RawRedis(redis.Redis):
    """A node connection that leaves the user's commands' replies as read.

    RedisCluster still needs the reply callbacks of its own commands
    (COMMAND, CLUSTER SLOTS): only a command carrying the RAW option skips
    them.
    """

    def parse_response(self, connection, command_name, **options):
        if options.pop(RAW, False):
            return connection.read_response()
        return super().parse_response(connection, command_name, **options)


# redis-py logs every error reply with a traceback; they are replies here.
logging.getLogger("redis").setLevel(logging.CRITICAL)

# RedisCluster's NodesManager makes each node's connection with this name.
redis.cluster.Redis = RawRedis


class RawCluster(redis.cluster.RedisCluster):
    """Keeps the RAW option from the callbacks that merge the replies of a
    command sent to several nodes (PING, DBSIZE, KEYS, ...)."""

    def _process_result(self, command, res, **kwargs):
        kwargs.pop(RAW, None)
        return super()._process_result(command, res, **kwargs)


def to_json(v):
    if isinstance(v, ResponseError):  # an error inside an array reply
        return {"error": str(v)}
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (list, tuple)):
        return [to_json(x) for x in v]
    if isinstance(v, dict):  # a reply from each of several nodes, by name
        return {str(k): to_json(x) for k, x in v.items()}
    return v  # str, int, None, or a bool that a merging callback made


def main():
    if len(sys.argv) != 2 or ":" not in sys.argv[1]:
        sys.exit("usage: cluster.py SEED_HOST:SEED_PORT < commands.json")
    host, _, port = sys.argv[1].rpartition(":")
    try:
        cmds = json.load(sys.stdin)
        if not isinstance(cmds, list) or not all(
            isinstance(c, list) and c and all(isinstance(a, str) for a in c)
            for c in cmds
        ):
            raise ValueError("want an array of non-empty arrays of strings")
    except ValueError as e:
        sys.exit(f"cluster.py: bad input: {e}")

    try:
        rc = RawCluster(
            host=host, port=int(port), decode_responses=True
        )
    except Exception as e:  # no cluster at the seed
        sys.exit(f"cluster.py: connecting to {sys.argv[1]}: {e}")

    out = []
    for cmd in cmds:
        try:
            out.append(to_json(rc.execute_command(*cmd, **{RAW: True})))
        except (RedisError, RedisClusterException) as e:
            out.append({"error": str(e)})
        except Exception as e:  # the library failing on odd arguments
            out.append({"error": f"{type(e).__name__}: {e}"})
    rc.close()
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
