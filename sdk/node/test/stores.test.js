"use strict";
// express-rate-limit and @fastify/rate-limit with the rlserver stores: the
// library's own semantics (N allowed then 429, its headers, reset) exactly,
// under 50 concurrent requests; and the express middleware over HTTP.
const { test, before, after } = require("node:test");
const assert = require("node:assert/strict");
const express = require("express");
const { rateLimit } = require("express-rate-limit");
const Fastify = require("fastify");
const { Client, RlserverStore, fastifyStore, middleware } = require("..");
const { startServer, redisFor, setClock, EPOCH_MS } = require("./helpers");

let srv, redis, c;
before(async () => {
  srv = await startServer();
  redis = redisFor(srv);
  c = new Client(redis, { timeoutMs: 1000 });
  await c.check();
});
after(async () => {
  redis.disconnect();
  await srv.stop();
});

async function listen(app) {
  const server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

const burst = (url, n) => Promise.all(Array.from({ length: n }, () => fetch(url)));

test("express-rate-limit with RlserverStore: 10 of 50 concurrent admitted, its headers, reset", async () => {
  await redis.flushall();
  await setClock(redis, EPOCH_MS + 30_000); // 30 s into a 60 s window
  const store = new RlserverStore({ client: c });
  const app = express();
  app.use(rateLimit({ windowMs: 60_000, limit: 10, store, standardHeaders: "draft-7", legacyHeaders: true }));
  app.get("/", (_req, res) => res.send("ok"));
  const srvApp = await listen(app);
  try {
    const rs = await burst(srvApp.url, 50);
    const codes = rs.map((r) => r.status);
    assert.equal(codes.filter((s) => s === 200).length, 10);
    assert.equal(codes.filter((s) => s === 429).length, 40);
    const denied = rs.find((r) => r.status === 429);
    assert.equal(denied.headers.get("ratelimit"), "limit=10, remaining=0, reset=30");
    assert.equal(denied.headers.get("ratelimit-policy"), "10;w=60");
    assert.equal(denied.headers.get("x-ratelimit-limit"), "10");
    assert.equal(denied.headers.get("x-ratelimit-remaining"), "0");
    assert.equal(denied.headers.get("retry-after"), "30");
    const remaining = rs.filter((r) => r.status === 200).map((r) => Number(r.headers.get("x-ratelimit-remaining"))).sort((a, b) => a - b);
    assert.deepEqual(remaining, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const keys = await redis.keys("*");
    assert.equal(keys.length, 1);
    const key = keys[0];
    assert.match(key, /^rl:express-rate-limit:fixed:(::ffff:)?127\.0\.0\.1$/);
    // The window's end resets it (the server's clock).
    await redis.call("DEBUG", "CLOCK", "ADVANCE", "30000");
    assert.equal((await fetch(srvApp.url)).status, 200);
    // resetKey and get.
    const k = key.slice(store.prefix.length);
    assert.equal((await store.get(k)).totalHits, 1);
    await store.resetKey(k);
    assert.equal(await store.get(k), undefined);
    await store.increment(k);
    await store.resetAll();
    assert.deepEqual(await redis.keys("*"), []);
  } finally {
    await srvApp.close();
  }
});

test("RlserverStore refuses what it cannot do, loudly", async () => {
  const events = [];
  const logs = [];
  const cc = c.withOptions({ onError: (e) => events.push(e), log: (m) => logs.push(m) });
  const store = new RlserverStore({ client: cc });
  store.init({ windowMs: 1000, limit: 5, skipFailedRequests: true });
  await assert.rejects(store.increment("k"), /skipFailedRequests/);
  assert.equal(events.length, 1);
  assert.equal(events[0].config, true);
  assert.match(logs[0], /skipFailedRequests/);
});

test("@fastify/rate-limit with fastifyStore: 5 of 50 concurrent admitted, its headers, per-route keys", async () => {
  await redis.flushall();
  await setClock(redis, EPOCH_MS + 50_000); // 10 s before the 60 s window ends
  const app = Fastify();
  await app.register(require("@fastify/rate-limit"), { max: 5, timeWindow: 60_000, store: fastifyStore(c) });
  app.get("/", async () => "ok");
  app.get("/strict", { config: { rateLimit: { max: 2, timeWindow: 60_000 } } }, async () => "ok");
  await app.listen({ port: 0, host: "127.0.0.1" });
  const url = `http://127.0.0.1:${app.server.address().port}`;
  try {
    const rs = await burst(url + "/", 50);
    assert.equal(rs.filter((r) => r.status === 200).length, 5);
    assert.equal(rs.filter((r) => r.status === 429).length, 45);
    const denied = rs.find((r) => r.status === 429);
    assert.equal(denied.headers.get("x-ratelimit-limit"), "5");
    assert.equal(denied.headers.get("x-ratelimit-remaining"), "0");
    assert.equal(denied.headers.get("x-ratelimit-reset"), "10");
    assert.equal(denied.headers.get("retry-after"), "10");
    const strict = await burst(url + "/strict", 5);
    assert.deepEqual(strict.map((r) => r.status).sort(), [200, 200, 429, 429, 429]);
    const keys = (await redis.keys("*")).sort();
    assert.equal(keys.length, 2);
    assert.match(keys[0], /^rl:fastify-rate-limit:fixed:127\.0\.0\.1$/);
    assert.match(keys[1], /^rl:fastify-rate-limit:fixed:GET\/strict-127\.0\.0\.1$/);
  } finally {
    await app.close();
  }
});

test("express middleware over HTTP: exact decisions and fields, a lease held per request", async () => {
  await redis.flushall();
  await setClock(redis);
  const app = express();
  app.get("/tb", middleware({ limiter: c.tokenBucket(3, 1, 1000), xRateLimit: true }), (_q, r) => r.send("ok"));
  let release;
  const gate = new Promise((r) => (release = r));
  app.get("/cc", middleware({ limiter: c.concurrency(1, 60_000), key: () => "one" }), async (_q, r) => {
    await gate;
    r.send("ok");
  });
  const s = await listen(app);
  try {
    const rs = [];
    for (let i = 0; i < 4; i++) rs.push(await fetch(s.url + "/tb"));
    assert.deepEqual(rs.map((r) => r.status), [200, 200, 200, 429]);
    assert.equal(rs[3].headers.get("ratelimit"), '"default";r=0;t=3');
    assert.equal(rs[3].headers.get("ratelimit-policy"), '"default";q=3;w=3');
    assert.equal(rs[3].headers.get("retry-after"), "1");
    assert.equal(rs[3].headers.get("x-ratelimit-remaining"), "0");
    // One request holds the only lease; a second is denied until it ends.
    const first = fetch(s.url + "/cc");
    await require("./helpers").until(async () => (await redis.exists("rl:default:concurrency:one")) === 1, 5000, "the lease");
    assert.equal((await fetch(s.url + "/cc")).status, 429);
    release();
    assert.equal((await first).status, 200);
    await require("./helpers").until(async () => (await redis.exists("rl:default:concurrency:one")) === 0, 5000, "the release");
  } finally {
    await s.close();
  }
});
