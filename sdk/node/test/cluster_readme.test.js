"use strict";
// The limiters over ioredis's Cluster on a two-node static cluster, and the
// README's endpoint example (example/server.ts, compiled by the test run)
// served and exercised over HTTP.
const { test } = require("node:test");
const assert = require("node:assert/strict");
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const { Client, keySlot } = require("..");
const { startServer, closedPort, setClock, until, tmpdir, Redis, redisFor, EPOCH_MS } = require("./helpers");

async function startCluster() {
  for (let attempt = 0; attempt < 5; attempt++) {
    const ports = [await closedPort(), await closedPort()];
    const cfg = path.join(tmpdir(), "cluster.json");
    const id = (n) => String(n).padStart(40, "0");
    fs.writeFileSync(cfg, JSON.stringify({ version: 1, shards: [
      { slots: [[0, 8191]], primary: { id: id(1), host: "127.0.0.1", port: ports[0] }, replicas: [] },
      { slots: [[8192, 16383]], primary: { id: id(2), host: "127.0.0.1", port: ports[1] }, replicas: [] },
    ] }));
    const nodes = [];
    try {
      for (const p of ports) nodes.push(await startServer(["--port", String(p), "--cluster-config", cfg]));
      return nodes;
    } catch {
      for (const n of nodes) await n.stop();
    }
  }
  throw new Error("could not start a two-node cluster");
}

test("Cluster: keys routed to both primaries, CL.ALL under a hash tag, CROSSSLOT without", async () => {
  const nodes = await startCluster();
  const cluster = new Redis.Cluster([{ host: "127.0.0.1", port: nodes[0].port }], { enableOfflineQueue: false, redisOptions: { maxRetriesPerRequest: 0 } });
  try {
    const c = new Client(cluster, { timeoutMs: 2000 });
    await c.check();
    for (const n of nodes) {
      const r = redisFor(n);
      await new Promise((res) => r.once("ready", res));
      await setClock(r, EPOCH_MS);
      r.disconnect();
    }
    assert.equal(keySlot("foo"), 12182);
    assert.equal(keySlot("bar"), 5061);
    assert.equal(keySlot("{u}:a"), keySlot("u"));
    const tb = c.tokenBucket(5, 1, 1000);
    for (const key of ["foo", "bar"]) {
      assert.equal((await tb.allow(key)).remaining, 4);
      assert.equal((await tb.allow(key)).remaining, 3);
    }
    const rules = [c.tokenBucket(2, 1, 1000).ruleFor("{u}:user"), c.window("fixed", 10, 60000).ruleFor("{u}:global"), c.concurrency(1, 60000).ruleFor("{u}:conc")];
    const ad = await c.all(1, rules);
    assert.equal(ad.allowed, true);
    assert.ok(ad.leases[2]);
    const ad2 = await c.all(1, rules);
    assert.equal(ad2.allowed, false);
    assert.equal(ad2.decisions[2].allowed, false);
    assert.equal(await ad.leases[2].release(), true);
    assert.equal((await c.all(1, rules)).allowed, true);
    await assert.rejects(c.all(1, [tb.ruleFor("foo"), tb.ruleFor("bar")]), /CROSSSLOT/);
  } finally {
    cluster.disconnect();
    for (const n of nodes) await n.stop();
  }
});

/** Starts the compiled example on a free port; resolves when it logs "listening". */
async function runExample(env) {
  const port = await closedPort();
  const p = spawn(process.execPath, [path.join(__dirname, "../example/dist/server.js")], { env: { ...process.env, ...env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  p.stdout.on("data", (d) => (out += d));
  p.stderr.on("data", (d) => (out += d));
  await until(() => out.includes("listening") || p.exitCode !== null, 10000, "the example to listen");
  assert.equal(p.exitCode, null, out);
  return { url: `http://127.0.0.1:${port}/`, output: () => out, stop: () => { p.kill(); return new Promise((r) => (p.exitCode !== null ? r() : p.once("exit", r))); } };
}

test("README: the endpoint example is example/server.ts, and it serves 20 then 429", async () => {
  const readme = fs.readFileSync(path.join(__dirname, "../README.md"), "utf8");
  const block = /## Protect an HTTP endpoint[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, "README has the endpoint example");
  assert.equal(block[1], fs.readFileSync(path.join(__dirname, "../example/server.ts"), "utf8"));
  assert.ok(block[1].trim().split("\n").length < 20);
  const srv = await startServer();
  const admin = redisFor(srv);
  await new Promise((r) => admin.once("ready", r));
  await setClock(admin);
  const ex = await runExample({ RLSERVER_URL: `redis://${srv.addr}` });
  try {
    const codes = [];
    for (let i = 0; i < 21; i++) codes.push((await fetch(ex.url)).status);
    assert.deepEqual(codes, [...Array(20).fill(200), 429]);
    const last = await fetch(ex.url);
    assert.equal(last.headers.get("ratelimit"), '"default";r=0;t=2');
    assert.equal(last.headers.get("ratelimit-policy"), '"default";q=20;w=2');
    assert.equal(last.headers.get("retry-after"), "1");
    assert.deepEqual(await admin.keys("*"), [(await admin.keys("rl:default:tokenbucket:*"))[0]]);
  } finally {
    await ex.stop();
    admin.disconnect();
    await srv.stop();
  }
  // rlserver down before the first request: the local fallback (20, then
  // 10/s in real time) admits 20 of 40 concurrent requests, plus what
  // refilled while they ran, and denies the rest.
  const down = await runExample({ RLSERVER_URL: `redis://127.0.0.1:${await closedPort()}` });
  try {
    const t0 = performance.now();
    const rs = await Promise.all(Array.from({ length: 40 }, () => fetch(down.url)));
    const refilled = Math.ceil((performance.now() - t0) / 100);
    const ok = rs.filter((r) => r.status === 200).length;
    assert.ok(ok >= 20 && ok <= 20 + refilled, `${ok} admitted, ${refilled} refilled`);
    assert.equal(rs.filter((r) => r.status === 429).length, 40 - ok);
    assert.match(down.output(), /rlserver: CL.TOKENBUCKET: /);
  } finally {
    await down.stop();
  }
});
