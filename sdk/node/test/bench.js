#!/usr/bin/env node
// The SDK's overhead per decision over the raw ioredis call it makes: the
// raw redis.call("CL.TOKENBUCKET", ...) and the SDK's allow() alternate on
// one connection to a local server (so load on the machine hits both
// alike); prints the SDK's extra time as a percentage of the raw call's,
// with and without a per-call timeout. `npm run bench` (builds the server
// unless $RLSERVER_BIN is set). Not part of `npm test`.
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

async function main() {
  const n = Number(process.env.BENCH_N ?? 50000);
  const srv = await startServer();
  const redis = redisFor(srv);
  for (const [name, opts] of [["no-timeout", {}], ["timeout", { timeoutMs: 1000, failure: "open" }]]) {
    const tb = new Client(redis, opts).tokenBucket(1000000, 1000000, 1000);
    await tb.allow("bench");
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
    const pct = (100 * Number(sdk - raw)) / Number(raw);
    console.log(`${name}: raw ${Number(raw / BigInt(n))} ns/op, sdk ${Number(sdk / BigInt(n))} ns/op, overhead ${pct.toFixed(2)}%`);
  }
  redis.disconnect();
  await srv.stop();
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
