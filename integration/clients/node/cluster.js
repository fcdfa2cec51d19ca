#!/usr/bin/env node
// Runs commands through ioredis's cluster client, Redis.Cluster.
//
// Usage: node cluster.js SEED_HOST:SEED_PORT < commands.json
//
// Standard input is a JSON array of commands, each an array of strings, such
// as ["SET","k1","v"] or ["CL.THROTTLE","user:{a}","10","20","60"]. They run
// in order through one Redis.Cluster client that knows only the seed;
// standard output is one JSON array with the reply to each command: integers
// as numbers, bulk and status strings as strings, nil as null, arrays as
// arrays, and {"error": "<message>"} for an error reply (an error inside an
// array reply too), or for an error the library raises itself.
//
// Each command goes through cluster.call(name, ...args). ioredis finds a
// command's keys in its own command table (@ioredis/commands), not the
// server's; a command that table does not know (CL.THROTTLE, say) has no
// key for it, so it goes to a random primary, and ioredis follows the -MOVED
// (or -ASK) reply to the node that serves the key.
//
// Exits non-zero only when the input is not such an array or the client
// cannot connect to the cluster.
"use strict";

const Redis = require("ioredis");

function fail(msg) {
  process.stderr.write(`cluster.js: ${msg}\n`);
  process.exit(1);
}

function toJSON(v) {
  if (v instanceof Error) return { error: v.message };
  if (Buffer.isBuffer(v)) return v.toString("utf8");
  if (Array.isArray(v)) return v.map(toJSON);
  return v; // string, number or null
}

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on("data", (c) => chunks.push(c));
    process.stdin.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    process.stdin.on("error", reject);
  });
}

async function main() {
  const seed = process.argv[2];
  if (process.argv.length !== 3 || !seed.includes(":")) {
    fail("usage: cluster.js SEED_HOST:SEED_PORT < commands.json");
  }
  const colon = seed.lastIndexOf(":");
  const host = seed.slice(0, colon);
  const port = Number(seed.slice(colon + 1));

  let cmds;
  try {
    cmds = JSON.parse(await readStdin());
  } catch (e) {
    fail(`bad input: ${e.message}`);
  }
  const valid =
    Array.isArray(cmds) &&
    cmds.every(
      (c) => Array.isArray(c) && c.length > 0 && c.every((a) => typeof a === "string"),
    );
  if (!valid) fail("bad input: want an array of non-empty arrays of strings");

  const cluster = new Redis.Cluster([{ host, port }], {
    lazyConnect: true,
    // One try at the seed: a cluster that is not there fails at once.
    clusterRetryStrategy: () => null,
    redisOptions: { connectTimeout: 5000, commandTimeout: 10000, maxRetriesPerRequest: 1 },
  });
  cluster.on("error", (e) => process.stderr.write(`cluster.js: ${e.message}\n`));
  try {
    await cluster.connect();
  } catch (e) {
    fail(`connecting to ${seed}: ${e.message}`);
  }

  const out = [];
  for (const [name, ...args] of cmds) {
    try {
      out.push(toJSON(await cluster.call(name, ...args)));
    } catch (e) {
      out.push({ error: e.message });
    }
  }
  cluster.disconnect();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => fail(e.stack || String(e)));
