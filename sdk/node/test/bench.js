#!/usr/bin/env node
// The SDK's overhead per decision over the raw ioredis call it makes: the
// raw redis.call("CL.TOKENBUCKET", ...) and the SDK's allow() alternate on
// one connection to a local server (so load on the machine hits both
// alike); prints the SDK's extra time as a percentage of the raw call's,
// without a timeout and with one (the raw call has none: the timeout's cost
// counts as the SDK's). Each variant runs BENCH_ROUNDS rounds (5) of BENCH_N
// pairs (10000), the variants taking turns after a warm-up, and the median
// round is printed with every round's overhead, as sdk/python's bench.py.
//
//     cd sdk/node && npm run bench
//
// Builds the server unless $RLSERVER_BIN is set. Not part of `npm test`.
"use strict";
const { execFileSync } = require("node:child_process");
const os = require("node:os");
const path = require("node:path");
const fs = require("node:fs");
if (!process.env.RLSERVER_BIN) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rlserver-bench-"));
  process.env.RLSERVER_BIN = path.join(dir, "rlserver");
  execFileSync("go", ["build", "-o", process.env.RLSERVER_BIN, "./cmd/rlserver"], { cwd: path.resolve(__dirname, "../../.."), stdio: "inherit" });
}
const { Client } = require("..");
const { startServer, redisFor } = require("./helpers");

/** n alternating pairs: [raw ns, sdk ns]. */
async function round(redis, tb, n) {
  let raw = 0n;
  let sdk = 0n;
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await redis.call("CL.TOKENBUCKET", "bench", "1000000", "1000000", "1000ms", 1);
    const t1 = process.hrtime.bigint();
    await tb.allow("bench");
    sdk += process.hrtime.bigint() - t1;
    raw += t1 - t0;
  }
  return [Number(raw), Number(sdk)];
}

async function main() {
  const n = Number(process.env.BENCH_N ?? 10000);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
  const srv = await startServer();
  const redis = redisFor(srv);
  await new Promise((r) => redis.once("ready", r));
  const variants = [
    ["no timeout", {}],
    ["timeoutMs=1000 failure=open", { timeoutMs: 1000, failure: "open" }],
    ["timeoutMs=50 failure=local", { timeoutMs: 50, failure: "local" }],
  ].map(([name, opts]) => ({ name, tb: new Client(redis, opts).tokenBucket(1000000, 1000000, 1000), rounds: [] }));
  for (const v of variants) await round(redis, v.tb, Math.min(n, 2000)); // warm-up, not counted
  for (let r = 0; r < rounds; r++) for (const v of variants) v.rounds.push(await round(redis, v.tb, n));
  for (const v of variants) {
    const o = v.rounds.map(([raw, sdk]) => ({ pct: (100 * (sdk - raw)) / raw, raw: raw / n, sdk: sdk / n })).sort((a, b) => a.pct - b.pct);
    const m = o[o.length >> 1];
    const each = o.map((x) => x.pct.toFixed(1)).join(" ");
    console.log(`${v.name}: raw ${m.raw.toFixed(0)} ns/op, sdk ${m.sdk.toFixed(0)} ns/op, overhead ${m.pct.toFixed(2)}% (median of ${o.length} rounds: ${each})`);
  }
  redis.disconnect();
  await srv.stop();
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
