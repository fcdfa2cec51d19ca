"use strict";
// The failure policy against servers that are away (down before the first
// request, stopped, a connect that hangs), and configuration errors that no
// policy hides (wrong/missing password, WRONGTYPE), reported loudly.
const { test } = require("node:test");
const assert = require("node:assert/strict");
const { Client, middleware, sfString, headerFields } = require("..");
const { startServer, redisFor, closedPort, hangingListener, setClock, Redis } = require("./helpers");

const quiet = () => {};

test("server down before the first request: each mode answers", async () => {
  const port = await closedPort();
  const redis = new Redis({ host: "127.0.0.1", port, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  redis.on("error", quiet);
  try {
    const events = [];
    const base = new Client(redis, { timeoutMs: 200, onError: (e) => events.push(e) });
    await assert.rejects(base.tokenBucket(5, 1, 1000).allow("k"), /ECONNREFUSED|timed out|within/);
    const open = await base.withOptions({ timeoutMs: 200, failure: "open", onError: (e) => events.push(e) }).tokenBucket(5, 1, 1000).allow("k");
    assert.deepEqual(open, { allowed: true, limit: 5, remaining: 5, retryAfterMs: 0, resetAfterMs: 0, fallback: true });
    const closed = await base.withOptions({ timeoutMs: 200, failure: "closed" }).window("fixed", 3, 60000).allow("k");
    assert.deepEqual(closed, { allowed: false, limit: 3, remaining: 0, retryAfterMs: 1000, resetAfterMs: 1000, fallback: true });
    // local: an in-process bucket of the same limit, per key.
    const local = base.withOptions({ timeoutMs: 200, failure: "local" }).window("fixed", 3, 60000);
    const got = [];
    for (let i = 0; i < 4; i++) got.push((await local.allow("k")).allowed);
    assert.deepEqual(got, [true, true, true, false]);
    assert.equal((await local.allow("other")).allowed, true);
    assert.equal(events.length, 1);
    assert.equal(events[0].mode, "open");
    assert.equal(events[0].config, false);
    // The middleware under fail-open serves the first request of the process.
    const mw = middleware({ limiter: base.withOptions({ timeoutMs: 200, failure: "open" }).tokenBucket(5, 1, 1000), key: () => "ip" });
    const res = fakeRes();
    let nexted = false;
    await new Promise((resolve) => mw({}, res, () => { nexted = true; resolve(); }));
    assert.equal(nexted, true);
    assert.equal(res.headers["ratelimit"], '"default";r=5;t=0');
  } finally {
    redis.disconnect();
  }
});

test("the timeout bounds connecting (a listener whose backlog is full)", async () => {
  const l = await hangingListener();
  const redis = new Redis({ host: "127.0.0.1", port: l.port, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
  redis.on("error", quiet);
  try {
    const c = new Client(redis, { timeoutMs: 100, failure: "open" });
    const t0 = performance.now();
    const d = await c.tokenBucket(5, 1, 1000).allow("k");
    const took = performance.now() - t0;
    assert.equal(d.allowed, true);
    assert.equal(d.fallback, true);
    assert.ok(took >= 95 && took < 1000, `took ${took} ms`);
    const e = await c.withOptions({ timeoutMs: 100 }).tokenBucket(5, 1, 1000).allow("k").catch((x) => x);
    assert.equal(e.name, "TimeoutError");
  } finally {
    redis.disconnect();
    l.close();
  }
});

test("a server stopped while in use: fail-open answers, reported once", async () => {
  const srv = await startServer();
  const redis = redisFor(srv);
  redis.on("error", quiet);
  try {
    const events = [];
    const c = new Client(redis, { timeoutMs: 200, failure: "open", onError: (e) => events.push(e) });
    const tb = c.tokenBucket(2, 1, 60000);
    assert.equal((await tb.allow("k")).remaining, 1);
    await srv.stop();
    const d = await tb.allow("k");
    assert.equal(d.fallback, true);
    assert.equal(events.length, 1);
  } finally {
    redis.disconnect();
  }
});

test("a wrong password and a missing one are configuration errors, loud under every policy", async () => {
  const srv = await startServer(["--port", "0", "--requirepass", "secret"]);
  try {
    for (const password of ["wrong", undefined]) {
      const redis = redisFor(srv, { password });
      redis.on("error", quiet);
      const events = [];
      const logs = [];
      const c = new Client(redis, { timeoutMs: 500, failure: "open", onError: (e) => events.push(e), log: (m) => logs.push(m) });
      await assert.rejects(c.check(), /WRONGPASS|NOAUTH/);
      const err = await c.tokenBucket(5, 1, 1000).allow("k").catch((x) => x);
      assert.match(err.message, /^(WRONGPASS|NOAUTH)/, String(password));
      assert.equal(events.length, 2);
      assert.ok(events.every((e) => e.config && e.mode === "error"));
      assert.equal(logs.length, 2);
      assert.match(logs[1], /configuration error on CL.TOKENBUCKET "k": (WRONGPASS|NOAUTH)/);
      // The middleware answers 503 and the error was logged first.
      const res = fakeRes();
      await runMw(middleware({ limiter: c.tokenBucket(5, 1, 1000), key: () => "ip" }), res);
      assert.equal(res.statusCode, 503);
      assert.equal(logs.length, 3);
      redis.disconnect();
    }
    const ok = redisFor(srv, { password: "secret" });
    const d = await new Client(ok, { timeoutMs: 500 }).tokenBucket(5, 1, 1000).allow("k");
    assert.equal(d.remaining, 4);
    ok.disconnect();
  } finally {
    await srv.stop();
  }
});

test("two limiters behind the default key never collide; a WRONGTYPE is loud", async () => {
  const srv = await startServer();
  const redis = redisFor(srv);
  try {
    const events = [];
    const logs = [];
    const c = new Client(redis, { timeoutMs: 500, failure: "open", onError: (e) => events.push(e), log: (m) => logs.push(m) });
    await c.check();
    await setClock(redis);
    const a = middleware({ limiter: c.tokenBucket(2, 1, 60000), key: () => "10.0.0.1" });
    const b = middleware({ limiter: c.window("sliding", 3, 60000), key: () => "10.0.0.1" });
    const statuses = [];
    for (const mw of [a, b, a, b, a, b, b]) {
      const res = fakeRes();
      statuses.push(await runMw(mw, res));
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 429, 200, 429]);
    assert.deepEqual((await redis.keys("*")).sort(), ["rl:default:sliding:10.0.0.1", "rl:default:tokenbucket:10.0.0.1"]);
    assert.equal(events.length, 0);
    // The same raw key used by two kinds: WRONGTYPE, reported, a 503 that is logged.
    const raw = middleware({ limiter: c.window("fixed", 3, 60000), key: () => "rl:default:tokenbucket:10.0.0.1", rawKeys: true });
    const res = fakeRes();
    assert.equal(await runMw(raw, res), 503);
    assert.equal(events.length, 1);
    assert.equal(events[0].config, true);
    assert.match(logs[0], /WRONGTYPE/);
  } finally {
    redis.disconnect();
    await srv.stop();
  }
});

test("policy names are RFC 8941 strings", () => {
  assert.equal(sfString('a "q" \\ b'), '"a \\"q\\" \\\\ b"');
  assert.throws(() => sfString("tab\there"), /printable ASCII/);
  assert.throws(() => sfString("é"), /printable ASCII/);
  assert.throws(() => middleware({ limiter: { kind: "x", windowMs: 1, decide: async () => ({}) }, policy: "é" }), /printable ASCII/);
  const d = { allowed: false, limit: 5, remaining: 0, retryAfterMs: 1001, resetAfterMs: 2500, fallback: false };
  assert.deepEqual(headerFields('per "user"', 5000, d, false), {
    "RateLimit-Policy": '"per \\"user\\"";q=5;w=5',
    RateLimit: '"per \\"user\\"";r=0;t=3',
    "Retry-After": "2",
  });
});

/** A minimal ServerResponse for calling the middleware directly. */
function fakeRes() {
  const listeners = {};
  return {
    statusCode: 200,
    headers: {},
    setHeader(k, v) { this.headers[k.toLowerCase()] = v; },
    end() { this.ended = true; this.onEnd?.(); },
    once(ev, fn) { listeners[ev] = fn; },
    emit(ev) { listeners[ev]?.(); },
  };
}

/** Runs a middleware on fakeRes: the status it answers, or 200 if it calls next. */
function runMw(mw, res) {
  return new Promise((resolve) => {
    res.onEnd = () => resolve(res.statusCode);
    mw({}, res, () => resolve(200));
  });
}

module.exports = { fakeRes, runMw };
