"use strict";
// The shared conformance cases (sdk/conformance/cases.json) through the
// typed API against a real server, as sdk/go/conformance_test.go runs them;
// then the adapters' cases once more through the express-rate-limit and
// @fastify/rate-limit stores (the file's README, "Through a store").
const { test, before, after } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { Client, Lease, RlserverStore, fastifyStore, headerFields } = require("..");
const { startServer, redisFor, setClock } = require("./helpers");

const file = JSON.parse(fs.readFileSync(path.join(__dirname, "../../conformance/cases.json"), "utf8"));
const HEADERS = ["RateLimit", "RateLimit-Policy", "Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"];

function parseDur(s) {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(s);
  if (!m) throw new Error(`bad duration ${s}`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000 }[m[2] ?? "s"];
}
const ints = (d) => [d.allowed ? 1 : 0, d.limit, d.remaining, d.retryAfterMs, d.resetAfterMs];

function ruleOf(c, w) {
  const n = (i) => Number(w[i]);
  switch (w[0].toUpperCase()) {
    case "TOKENBUCKET":
      return [c.tokenBucket(n(2), n(3), parseDur(w[4])).ruleFor(w[1]), 5];
    case "THROTTLE":
      return [c.throttle(n(2), n(3), parseDur(w[4])).ruleFor(w[1]), 5];
    case "LEAKYBUCKET":
      return [c.leakyBucket(n(2), n(3), parseDur(w[4])).ruleFor(w[1]), 5];
    case "FIXED":
    case "SLIDING":
    case "LOG":
      return [c.window(w[0].toLowerCase(), n(2), parseDur(w[3])).ruleFor(w[1]), 4];
    case "ACQUIRE":
      return [c.concurrency(n(2), parseDur(w[3])).ruleFor(w[1]), 4];
  }
  throw new Error(`unknown rule ${w[0]}`);
}

/** One step through the SDK, in the file's form. */
async function runStep(c, redis, policy, cmd, st) {
  const got = {};
  const opt = (i, def) => (i < cmd.length ? Number(cmd[i]) : def);
  let d, lim;
  try {
    switch (cmd[0].toUpperCase()) {
      case "CL.TOKENBUCKET": {
        const tb = c.tokenBucket(Number(cmd[2]), Number(cmd[3]), parseDur(cmd[4]));
        lim = tb;
        d = cmd.length > 7 && cmd[6].toUpperCase() === "RESERVE" ? await tb.reserve(cmd[1], Number(cmd[5]), parseDur(cmd[7])) : await tb.allow(cmd[1], opt(5, 1));
        break;
      }
      case "CL.LEAKYBUCKET":
        lim = c.leakyBucket(Number(cmd[2]), Number(cmd[3]), parseDur(cmd[4]));
        d = await lim.allow(cmd[1], opt(5, 1));
        break;
      case "CL.WINDOW":
        lim = c.window(cmd.length > 5 ? cmd[5].toLowerCase() : "sliding", Number(cmd[2]), parseDur(cmd[3]));
        d = await lim.allow(cmd[1], opt(4, 1));
        break;
      case "CL.ACQUIRE": {
        lim = c.concurrency(Number(cmd[2]), parseDur(cmd[3]));
        const r = await lim.acquire(cmd[1], opt(4, 1));
        d = r.decision;
        got.lease = r.lease !== null;
        if (r.lease) st.lease = r.lease.id;
        break;
      }
      case "CL.ALL": {
        const nr = Number(cmd[1]);
        let w = cmd.slice(2);
        const rules = [];
        for (let i = 0; i < nr; i++) {
          const [r, k] = ruleOf(c, w);
          rules.push(r);
          w = w.slice(k);
        }
        const cost = w.length === 2 && w[0].toUpperCase() === "COST" ? Number(w[1]) : 1;
        const ad = await c.all(cost, rules);
        ad.leases.forEach((l) => l && (st.lease = l.id));
        return { all: { allowed: ad.allowed ? 1 : 0, decisions: ad.decisions.map(ints) } };
      }
      case "CL.RELEASE":
      case "CL.RENEW": {
        const le = new Lease(st.lease, cmd[1], 1, c, undefined);
        const ok = cmd[0].toUpperCase() === "CL.RELEASE" ? await le.release() : await le.renew(parseDur(cmd[3]));
        return { reply: ok ? 1 : 0 };
      }
      default:
        return { reply: await redis.call(...cmd) };
    }
  } catch (e) {
    return { error: e.message.split(" ")[0] };
  }
  got.decision = ints(d);
  const h = headerFields(policy, lim.windowMs, d, true);
  got.headers = Object.fromEntries(HEADERS.filter((k) => k in h).map((k) => [k, h[k]]));
  return got;
}

let srv, redis, c;
before(async () => {
  srv = await startServer();
  redis = redisFor(srv);
  c = new Client(redis);
  await c.check();
});
after(async () => {
  redis.disconnect();
  await srv.stop();
});

for (const cs of file.cases) {
  test(`conformance: ${cs.name}`, async () => {
    await redis.flushall();
    await setClock(redis, file.start_unix_ms);
    const st = { lease: "" };
    for (const [i, step] of cs.steps.entries()) {
      if (step.advance_ms !== undefined) {
        await redis.call("DEBUG", "CLOCK", "ADVANCE", String(step.advance_ms));
        continue;
      }
      const cmd = step.command.map((a) => a.replaceAll("$lease", st.lease));
      const got = await runStep(c, redis, file.policy, cmd, st);
      const want = Object.fromEntries(Object.entries(step).filter(([k]) => k !== "command"));
      assert.deepStrictEqual(got, want, `step ${i}: ${JSON.stringify(step.command)}`);
    }
  });
}

// Through a store: each CL.WINDOW step of an adapters case is the store's
// hit (n = 1) or read (n = 0) of that key, and the store must report what
// the libraries expect of the step's decision [allowed, limit, remaining,
// retry_after_ms, reset_after_ms]: a hit's count is limit - remaining when
// admitted and limit + 1 when denied (the denied hit is not counted), a
// read's count limit - remaining, and the reset comes reset_after_ms from
// now. DEL is the store's reset of the key (a raw DEL for @fastify/rate-limit,
// whose store has none); other commands are sent as they are. Keys are the
// case's own (prefix ""). A case with a hit of n > 1 is not one a store of
// these libraries can make.

const hitsOf = (d, n) => (d[0] === 1 ? d[1] - d[2] : d[1] + n);

/** The step as a store operation: {key, mode, limit, windowMs, n} for CL.WINDOW, else null. */
function windowStep(cmd) {
  if (cmd[0].toUpperCase() !== "CL.WINDOW") return null;
  return { key: cmd[1], limit: Number(cmd[2]), windowMs: parseDur(cmd[3]), n: Number(cmd[4] ?? 1), mode: (cmd[5] ?? "sliding").toLowerCase() };
}

function storeCanRun(cs) {
  return cs.steps.every((st) => {
    if (!st.command) return true;
    const w = windowStep(st.command);
    return w ? w.n <= 1 : !st.command[0].toUpperCase().startsWith("CL.");
  });
}

/** Asserts lo <= at <= hi, for a reset computed from the local clock. */
function within(at, lo, hi, what) {
  assert.ok(at >= lo && at <= hi, `${what}: ${at} not in [${lo}, ${hi}]`);
}

const viaStore = {
  async "express-rate-limit"(steps) {
    const stores = new Map();
    const storeFor = ({ mode, limit, windowMs }) => {
      const id = `${mode}/${limit}/${windowMs}`;
      if (!stores.has(id)) {
        const s = new RlserverStore({ client: c, mode, prefix: "" });
        s.init({ windowMs, limit });
        stores.set(id, s);
      }
      return stores.get(id);
    };
    for (const [i, st] of steps) {
      const w = windowStep(st.command);
      const d = st.decision;
      if (w) {
        const t0 = Date.now();
        const got = w.n === 1 ? await storeFor(w).increment(w.key) : await storeFor(w).get(w.key);
        const t1 = Date.now();
        if (w.n === 0 && d[1] === d[2]) {
          assert.equal(got, undefined, `step ${i}: get of an unused key`);
          continue;
        }
        assert.equal(got.totalHits, w.n === 1 ? hitsOf(d, 1) : d[1] - d[2], `step ${i}: totalHits`);
        within(got.resetTime.getTime(), t0 + d[4], t1 + d[4], `step ${i}: resetTime`);
      } else if (st.command[0].toUpperCase() === "DEL") {
        await new RlserverStore({ client: c, prefix: "" }).resetKey(st.command[1]);
      } else {
        assert.deepStrictEqual(await redis.call(...st.command), st.reply, `step ${i}: ${JSON.stringify(st.command)}`);
      }
    }
  },
  async "@fastify/rate-limit"(steps) {
    const stores = new Map();
    const storeFor = (mode) => {
      if (!stores.has(mode)) stores.set(mode, new (fastifyStore(c, { mode, prefix: "" }))());
      return stores.get(mode);
    };
    for (const [i, st] of steps) {
      const w = windowStep(st.command);
      if (!w) {
        assert.deepStrictEqual(await redis.call(...st.command), st.reply, `step ${i}: ${JSON.stringify(st.command)}`);
        continue;
      }
      const s = storeFor(w.mode);
      const got = await new Promise((resolve, reject) => (w.n === 1 ? s.incr : s.read).call(s, w.key, (e, r) => (e ? reject(e) : resolve(r)), w.windowMs, w.limit));
      const d = st.decision;
      assert.deepStrictEqual(got, { current: w.n === 1 ? hitsOf(d, 1) : d[1] - d[2], ttl: d[4] }, `step ${i}: ${JSON.stringify(st.command)}`);
    }
  },
};

const storeCases = file.cases.filter((cs) => cs.name.startsWith("adapters:") && storeCanRun(cs));
test("every store runs the adapters' cases of hits of 1 and 0", () => {
  assert.deepEqual(
    storeCases.map((cs) => cs.name),
    file.cases.filter((cs) => cs.name.startsWith("adapters:") && !cs.steps.some((st) => st.command && windowStep(st.command)?.n > 1)).map((cs) => cs.name),
  );
  assert.ok(storeCases.length >= 3, `${storeCases.length} cases`);
});
for (const [store, run] of Object.entries(viaStore)) {
  for (const cs of storeCases) {
    test(`conformance via ${store}: ${cs.name}`, async () => {
      await redis.flushall();
      await setClock(redis, file.start_unix_ms);
      const steps = [];
      for (const [i, st] of cs.steps.entries()) {
        if (st.advance_ms !== undefined) {
          await run(steps.splice(0));
          await redis.call("DEBUG", "CLOCK", "ADVANCE", String(st.advance_ms));
        } else steps.push([i, st]);
      }
      await run(steps);
    });
  }
}
