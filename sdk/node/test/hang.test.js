"use strict";
// The timeout on a connection that is up: a server that stops answering
// gets the failure policy at each call's deadline (one timer per client
// serves every call's deadline, so it must move from call to call), calls
// waiting at once each end at their own deadline, the connection serves
// again when the server does, a call that timed out while connecting is
// never sent afterwards, and the deadline queue holds only the calls in
// flight. Against a RESP server of the tests' own.
const { test } = require("node:test");
const assert = require("node:assert/strict");
const { Client, TimeoutError } = require("..");
const { respServer, Redis } = require("./helpers");

const T = 300;
const SLACK = 700; // a loaded two-core machine
const FAST = { allowed: true, limit: 5, remaining: 4, retryAfterMs: 0, resetAfterMs: 200, fallback: false };
const WANT = {
  open: { allowed: true, limit: 5, remaining: 5, retryAfterMs: 0, resetAfterMs: 0, fallback: true },
  closed: { allowed: false, limit: 5, remaining: 0, retryAfterMs: 1000, resetAfterMs: 1000, fallback: true },
  local: { allowed: true, limit: 5, remaining: 4, retryAfterMs: 0, resetAfterMs: 1000, fallback: true },
};

function connect(port, extra = {}) {
  const redis = new Redis({ host: "127.0.0.1", port, enableOfflineQueue: false, maxRetriesPerRequest: 0, ...extra });
  redis.on("error", () => {});
  return redis;
}

const ready = (redis) => (redis.status === "ready" ? undefined : new Promise((r) => redis.once("ready", r)));

async function timed(p) {
  const t0 = performance.now();
  const v = await p.catch((e) => e);
  return [v, performance.now() - t0];
}

for (const mode of ["error", "open", "closed", "local"]) {
  test(`a reply that never comes, after fast calls: ${mode} answers at the deadline`, async () => {
    const srv = await respServer({ stallOn: "slow" });
    const redis = connect(srv.port);
    try {
      await ready(redis);
      const events = [];
      const c = new Client(redis, { timeoutMs: T, failure: mode, onError: (e) => events.push(e) });
      const tb = c.tokenBucket(5, 1, 1000);
      // The first fast call arms the timer at its deadline, which falls
      // while the slow call waits: the timer must move on to the slow one.
      for (let i = 0; i < 50; i++) assert.deepEqual(await tb.allow("fast"), FAST);
      const [got, took] = await timed(tb.allow("slow"));
      assert.ok(took >= T * 0.95 && took < T + SLACK, `took ${took} ms`);
      if (mode === "error") {
        assert.ok(got instanceof TimeoutError, String(got));
        assert.match(got.message, /CL\.TOKENBUCKET did not complete within 300 ms/);
        assert.equal(events.length, 0);
      } else {
        assert.deepEqual(got, WANT[mode]);
        assert.deepEqual(events.map((e) => [e.mode, e.command, e.config, e.error.name]), [[mode, "CL.TOKENBUCKET", false, "TimeoutError"]]);
      }
      // The server answers again: the late reply is dropped, the connection serves.
      srv.resume();
      assert.deepEqual(await tb.allow("fast"), FAST);
      assert.equal(events.length, mode === "error" ? 0 : 1);
    } finally {
      redis.disconnect();
      await srv.close();
    }
  });
}

test("calls waiting at once on a stalled server each end at their own deadline", async () => {
  const srv = await respServer({ stallOn: "slow" });
  const redis = connect(srv.port);
  try {
    await ready(redis);
    const tb = new Client(redis, { timeoutMs: T, failure: "open" }).tokenBucket(5, 1, 1000);
    const call = async (delay, key) => {
      await new Promise((r) => setTimeout(r, delay)); // staggers the starts; not a synchronisation
      return timed(tb.allow(key));
    };
    const got = await Promise.all([call(0, "slow"), call(T / 3, "a"), call(T / 3, "b"), call((2 * T) / 3, "c")]);
    for (const [d, took] of got) {
      assert.deepEqual(d, WANT.open);
      assert.ok(took >= T * 0.95 && took < T + SLACK, `took ${took} ms`);
    }
    srv.resume();
    assert.deepEqual(await tb.allow("k"), FAST);
  } finally {
    redis.disconnect();
    await srv.close();
  }
});

test("a call that timed out while connecting is never sent once the connection is up", async () => {
  const srv = await respServer({ holdReady: true });
  const redis = connect(srv.port);
  try {
    const c = new Client(redis, { timeoutMs: 100, failure: "open" });
    const [got, took] = await timed(c.tokenBucket(5, 1, 1000).allow("k"));
    assert.deepEqual(got, WANT.open);
    assert.ok(took >= 95 && took < 100 + SLACK, `took ${took} ms`);
    const up = ready(redis);
    srv.release();
    await up;
    // PING's reply comes after anything sent before it on this connection.
    await c.check();
    const sent = srv.commands.map((cmd) => cmd[0].toUpperCase());
    assert.deepEqual(sent.filter((n) => n.startsWith("CL.")), []);
    assert.equal(sent[sent.length - 1], "PING");
    assert.deepEqual(await c.tokenBucket(5, 1, 1000).allow("k"), FAST);
  } finally {
    redis.disconnect();
    await srv.close();
  }
});

test("the deadline queue holds only the calls in flight", async () => {
  const srv = await respServer();
  const redis = connect(srv.port);
  try {
    await ready(redis);
    const c = new Client(redis, { timeoutMs: 60_000 });
    const tb = c.tokenBucket(5, 1, 1000);
    for (let i = 0; i < 1000; i++) await tb.allow("k");
    assert.equal(c.deadlines.size, 1); // the last call, dropped at the next
    const ds = await Promise.all(Array.from({ length: 500 }, () => tb.allow("k")));
    assert.deepEqual(ds, Array(500).fill(FAST));
    await tb.allow("k");
    assert.equal(c.deadlines.size, 1);
    assert.equal(new Client(redis).deadlines, undefined); // no timeout: no queue
  } finally {
    redis.disconnect();
    await srv.close();
  }
});
