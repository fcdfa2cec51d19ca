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
  const store = new RlserverStore({ client: cc, mode: "sliding" });
  store.init({ windowMs: 1000, limit: 5, skipFailedRequests: true });
  await assert.rejects(store.increment("k"), /skipFailedRequests\/skipSuccessfulRequests on fixed windows only, not sliding/);
  const noLimit = new RlserverStore({ client: cc });
  noLimit.init({ windowMs: 1000, limit: () => 5 });
  await assert.rejects(noLimit.get("k"), /needs a numeric limit/);
  assert.deepEqual(events.map((e) => [e.command, e.config]), [["init", true], ["init", true]]);
  assert.match(logs[0], /fixed windows only/);
  assert.match(logs[1], /numeric limit/);
});

/** Counts the store's finished decrements, so that a test can wait for a give-back. */
function watched() {
  const w = { done: 0, expected: 0, waiters: [] };
  w.Store = class extends RlserverStore {
    async decrement(key) {
      await super.decrement(key);
      w.done++;
      for (const f of w.waiters.splice(0)) f();
    }
  };
  w.reached = async (n) => {
    while (w.done < n) await new Promise((r) => w.waiters.push(r));
  };
  return w;
}

test("express-rate-limit skipFailedRequests and skipSuccessfulRequests: hits given back, counted as its own stores do", async () => {
  await redis.flushall();
  await setClock(redis, EPOCH_MS + 30_000); // 30 s into a 60 s window
  const status = (code) => (_req, res) => res.status(code).send(String(code));
  const limited = (w, prefix, limit, skip) =>
    rateLimit({ windowMs: 60_000, limit, store: new w.Store({ client: c, prefix }), ...skip, keyGenerator: () => "u" });
  const failed = watched();
  const succeeded = watched();
  const burst = watched();
  const app = express();
  app.get("/failed/ok", limited(failed, "f:", 3, { skipFailedRequests: true }), status(200));
  app.get("/failed/bad", limited(failed, "f:", 3, { skipFailedRequests: true }), status(500));
  app.get("/ok/ok", limited(succeeded, "s:", 3, { skipSuccessfulRequests: true }), status(200));
  app.get("/ok/bad", limited(succeeded, "s:", 3, { skipSuccessfulRequests: true }), status(500));
  app.get("/burst", limited(burst, "b:", 5, { skipFailedRequests: true }), status(200));
  const s = await listen(app);
  // One request at a time, each waiting for its give-back (which runs once its response has finished).
  const seq = async (path, n, w, givenBack) => {
    const out = [];
    for (let i = 0; i < n; i++) {
      const r = await fetch(s.url + path);
      await r.text();
      out.push(r.status);
      if (givenBack(r.status)) await w.reached(++w.expected);
    }
    return out;
  };
  const bad = (code) => code >= 400;
  const good = (code) => code < 400;
  try {
    // skipFailedRequests: failures (a 429 too) are given back; only successes count.
    assert.deepEqual(await seq("/failed/bad", 6, failed, bad), [500, 500, 500, 500, 500, 500]);
    assert.deepEqual(await seq("/failed/ok", 4, failed, bad), [200, 200, 200, 429]);
    assert.deepEqual(await seq("/failed/bad", 1, failed, bad), [429]);
    const f = new RlserverStore({ client: c, prefix: "f:" });
    f.init({ windowMs: 60_000, limit: 3, skipFailedRequests: true });
    assert.equal((await f.get("u")).totalHits, 3);
    // skipSuccessfulRequests: successes are given back; failures count, a 429 too (as its MemoryStore).
    assert.deepEqual(await seq("/ok/ok", 6, succeeded, good), [200, 200, 200, 200, 200, 200]);
    const ok = new RlserverStore({ client: c, prefix: "s:" });
    ok.init({ windowMs: 60_000, limit: 3, skipSuccessfulRequests: true });
    assert.equal(await ok.get("u"), undefined); // every hit given back
    assert.deepEqual(await seq("/ok/bad", 4, succeeded, good), [500, 500, 500, 429]);
    assert.deepEqual(await seq("/ok/ok", 1, succeeded, good), [429]);
    assert.equal((await ok.get("u")).totalHits, 5);
    // The window and its adjustment share a hash tag; the adjustment is kept only while not 0.
    assert.deepEqual((await redis.keys("*")).sort(), ["f:{u}", "s:{u}", "s:{u}:adj"]);
    // Under 50 at once: exactly the limit, and each 429 given back.
    const rs = await Promise.all(Array.from({ length: 50 }, () => fetch(s.url + "/burst").then(async (r) => (await r.text(), r.status))));
    assert.deepEqual([rs.filter((x) => x === 200).length, rs.filter((x) => x === 429).length], [5, 45]);
    await burst.reached(45);
    const b = new RlserverStore({ client: c, prefix: "b:" });
    b.init({ windowMs: 60_000, limit: 5, skipFailedRequests: true });
    assert.equal((await b.get("u")).totalHits, 5);
    // resetKey drops both keys; a give-back with nothing counted does nothing.
    await ok.resetKey("u");
    await ok.decrement("u");
    assert.equal(await ok.get("u"), undefined);
    assert.equal((await ok.increment("u")).totalHits, 1);
    // Both end with the window.
    await redis.call("DEBUG", "CLOCK", "ADVANCE", "30000");
    assert.deepEqual(await redis.keys("*"), []);
  } finally {
    await s.close();
  }
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

test("withLease holds the units for fn and always releases them; LimitedError when denied", async () => {
  await redis.flushall();
  await setClock(redis);
  const conc = c.concurrency(1, 60_000);
  const got = await conc.withLease("w", 1, async (lease) => {
    assert.equal(await redis.exists("w"), 1);
    const denied = await conc.withLease("w", 1, () => "never").catch((e) => e);
    assert.equal(denied.name, "LimitedError");
    assert.deepEqual(denied.decision, { allowed: false, limit: 1, remaining: 0, retryAfterMs: 60_000, resetAfterMs: 60_000, fallback: false });
    return lease.id.length;
  });
  assert.equal(got, 16);
  assert.equal(await redis.exists("w"), 0); // released when fn returned
  await assert.rejects(conc.withLease("w", 1, () => { throw new Error("boom"); }), /boom/);
  assert.equal(await redis.exists("w"), 0); // and when it threw
});
