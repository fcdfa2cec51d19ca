"use strict";
// The shared conformance cases (sdk/conformance/cases.json) through the
// typed API against a real server, as sdk/go/conformance_test.go runs them.
const { test, before, after } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { Client, Lease, headerFields } = require("..");
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
