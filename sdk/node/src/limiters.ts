import type { Client } from "./client";
import { BadReplyError, Decision, LimitedError, NEVER, parseDecision } from "./decision";
import { Spec } from "./local";

/** What the middleware and the stores need of a limiter. */
export interface Limiter {
  /** A decision for n units of key. */
  decide(key: string, n?: number): Promise<Decision>;
  /** The policy window: ms to go from empty to the full limit. */
  readonly windowMs: number;
  /** The algorithm: tokenbucket, throttle, leakybucket, fixed, sliding, log or concurrency. */
  readonly kind: string;
}

/** A duration in the wire contract's syntax, whole milliseconds. */
export function dur(ms: number): string {
  if (!(ms > 0) || !Number.isFinite(ms)) throw new RangeError(`rlserver: duration must be positive, got ${ms}`);
  return `${Math.max(1, Math.round(ms))}ms`;
}

function count(name: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`rlserver: ${name} must be a non-negative integer, got ${n}`);
  return n;
}

/** The time for rate per period to grant limit units. */
function refillMs(limit: number, rate: number, periodMs: number): number {
  return rate > 0 ? (limit / rate) * periodMs : periodMs;
}

/** One limiter applied to one key, for Client.all. */
export interface Rule {
  limiter: Base;
  key: string;
}

/** The part every limiter shares: its command, fixed parameters and fallback spec. */
export abstract class Base implements Limiter {
  /** @internal */ readonly params: string[];
  /** @internal */ readonly spec: Spec;
  abstract readonly kind: string;
  constructor(
    /** @internal */ readonly client: Client,
    /** @internal */ readonly command: string,
    /** @internal */ readonly rule: string,
    limit: number,
    windowMs: number,
    params: string[],
  ) {
    this.params = params;
    this.spec = { id: [rule, ...params].join(" "), limit, windowMs };
  }
  get windowMs(): number {
    return this.spec.windowMs;
  }
  get limit(): number {
    return this.spec.limit;
  }
  /** This limiter for key, as a rule of Client.all. */
  ruleFor(key: string): Rule {
    return { limiter: this, key };
  }
  abstract decide(key: string, n?: number): Promise<Decision>;
  /** @internal */
  protected send(key: string, n: number, extra: string[] = []): Promise<Decision> {
    count("n", n);
    return this.client.decide(this.command, key, [key, ...this.params, n, ...extra], this.spec, n);
  }
}

/** capacity tokens refilled at rate per period (CL.TOKENBUCKET). */
export class TokenBucket extends Base {
  readonly kind = "tokenbucket";
  constructor(c: Client, capacity: number, rate: number, periodMs: number) {
    super(c, "CL.TOKENBUCKET", "TOKENBUCKET", count("capacity", capacity), refillMs(capacity, rate, periodMs), [String(capacity), String(count("rate", rate)), dur(periodMs)]);
  }
  /** Takes n tokens from key's bucket if it holds them (n = 0 peeks). */
  allow(key: string, n = 1): Promise<Decision> {
    return this.send(key, n);
  }
  decide(key: string, n = 1): Promise<Decision> {
    return this.send(key, n);
  }
  /** Takes n tokens now if they exist within maxWaitMs: admitted, act after retryAfterMs. */
  reserve(key: string, n: number, maxWaitMs: number): Promise<Decision> {
    return this.send(key, n, ["RESERVE", dur(maxWaitMs)]);
  }
  /** Whole tokens key's bucket holds now (a peek). */
  async tokens(key: string): Promise<number> {
    return (await this.send(key, 0)).remaining;
  }
}

/** redis-cell's GCRA, sent as a CL.ALL THROTTLE rule so the decision is in ms. */
export class Throttle extends Base {
  readonly kind = "throttle";
  constructor(c: Client, maxBurst: number, countPerPeriod: number, periodMs: number) {
    super(c, "CL.THROTTLE", "THROTTLE", count("maxBurst", maxBurst) + 1, refillMs(maxBurst + 1, countPerPeriod, periodMs), [String(maxBurst), String(count("count", countPerPeriod)), dur(periodMs)]);
  }
  async allow(key: string, n = 1): Promise<Decision> {
    return (await this.client.all(n, [this.ruleFor(key)])).decisions[0];
  }
  decide(key: string, n = 1): Promise<Decision> {
    return this.allow(key, n);
  }
}

/** A queue of capacity units draining at rate per period (CL.LEAKYBUCKET). */
export class LeakyBucket extends Base {
  readonly kind = "leakybucket";
  constructor(c: Client, capacity: number, rate: number, periodMs: number) {
    super(c, "CL.LEAKYBUCKET", "LEAKYBUCKET", count("capacity", capacity), refillMs(capacity, rate, periodMs), [String(capacity), String(count("rate", rate)), dur(periodMs)]);
  }
  /** Adds n units if they fit; an admitted retryAfterMs is the delay before acting. */
  allow(key: string, n = 1): Promise<Decision> {
    return this.send(key, n);
  }
  decide(key: string, n = 1): Promise<Decision> {
    return this.send(key, n);
  }
}

export type WindowMode = "fixed" | "sliding" | "log";

/** At most limit units per window (CL.WINDOW FIXED, SLIDING or LOG). */
export class WindowLimiter extends Base {
  readonly kind: string;
  private readonly mode: string;
  constructor(c: Client, mode: WindowMode, limit: number, windowMs: number) {
    if (!["fixed", "sliding", "log"].includes(mode)) throw new RangeError(`rlserver: window mode ${mode}`);
    super(c, "CL.WINDOW", mode.toUpperCase(), count("limit", limit), windowMs, [String(limit), dur(windowMs)]);
    this.kind = mode;
    this.mode = mode.toUpperCase();
  }
  allow(key: string, n = 1): Promise<Decision> {
    return this.send(key, n, [this.mode]);
  }
  decide(key: string, n = 1): Promise<Decision> {
    return this.send(key, n, [this.mode]);
  }
}

/** Held units of a Concurrency limiter. A lease of the failure policy has id "". */
export class Lease {
  /** @internal */
  constructor(
    readonly id: string,
    readonly key: string,
    readonly n: number,
    private readonly c: Client,
    private readonly spec: Spec,
    private readonly local = false,
  ) {}
  /** Returns the units: true if held, false if unknown or expired. */
  async release(): Promise<boolean> {
    if (this.id === "") {
      if (this.local) this.c.local.release(this.spec, this.key, this.n);
      return true;
    }
    return (await this.c.call("CL.RELEASE", [this.key, this.id], this.key)) === 1;
  }
  /** Extends the lease to expire ms from now: false if it had expired. */
  async renew(ms: number): Promise<boolean> {
    if (this.id === "") return true;
    return (await this.c.call("CL.RENEW", [this.key, this.id, dur(ms)], this.key)) === 1;
  }
}

/** Units held at once by leases that expire unless renewed (CL.ACQUIRE/RELEASE/RENEW). */
export class Concurrency extends Base {
  readonly kind = "concurrency";
  constructor(c: Client, limit: number, leaseMs: number) {
    super(c, "CL.ACQUIRE", "ACQUIRE", count("limit", limit), leaseMs, [String(limit), dur(leaseMs)]);
  }
  /** Takes n units for key; lease is null when denied. */
  async acquire(key: string, n = 1): Promise<{ lease: Lease | null; decision: Decision }> {
    count("n", n);
    let v: unknown;
    try {
      v = await this.client.call("CL.ACQUIRE", [key, ...this.params, n], key);
    } catch (e) {
      const err = this.client.policy("CL.ACQUIRE", key, e as Error);
      if (err) throw err;
      const mode = this.client.opts.failure;
      const local = mode === "local" && this.client.local.acquire(this.spec, key, n);
      if (mode !== "open" && !local) {
        const r = this.client.opts.closedRetryAfterMs;
        return { lease: null, decision: { allowed: false, limit: this.limit, remaining: 0, retryAfterMs: r, resetAfterMs: r, fallback: true } };
      }
      const d = { allowed: true, limit: this.limit, remaining: 0, retryAfterMs: 0, resetAfterMs: 0, fallback: true };
      return { lease: new Lease("", key, n, this.client, this.spec, local), decision: d };
    }
    const d = parseDecision(v);
    // Denied, or a peek (n = 0), which holds nothing.
    if (!d.allowed || n === 0) return { lease: null, decision: d };
    return { lease: new Lease(leaseId(v), key, n, this.client, this.spec), decision: d };
  }
  /** Acquires and forgets the lease (it expires by itself). */
  async decide(key: string, n = 1): Promise<Decision> {
    return (await this.acquire(key, n)).decision;
  }
  /**
   * Runs fn holding n units of key and always releases them, whether fn
   * returns or throws. Throws LimitedError when denied.
   */
  async withLease<T>(key: string, n: number, fn: (lease: Lease) => Promise<T> | T): Promise<T> {
    const { lease, decision } = await this.acquire(key, n);
    if (!lease) throw new LimitedError(decision);
    try {
      return await fn(lease);
    } finally {
      await lease.release().catch(() => false);
    }
  }
}

function leaseId(v: unknown): string {
  if (Array.isArray(v) && v.length > 5) {
    const id = v[5];
    if (typeof id === "string") return id;
    if (Buffer.isBuffer(id)) return id.toString();
  }
  throw new BadReplyError(v);
}

/** CL.ALL's reply: allowed only if every rule admitted (then each consumed, else none did). */
export interface AllDecision {
  allowed: boolean;
  decisions: Decision[];
  /** Per rule: the lease of an admitted Concurrency rule, else null. */
  leases: (Lease | null)[];
}

/** @internal Client.all's body: cost units on every rule, atomically. */
export async function all(c: Client, cost: number, rules: Rule[]): Promise<AllDecision> {
  if (rules.length === 0) throw new RangeError("rlserver: all needs at least one rule");
  count("cost", cost);
  const args: (string | number)[] = [rules.length];
  for (const r of rules) args.push(r.limiter.rule, r.key, ...r.limiter.params);
  args.push("COST", cost);
  let v: unknown;
  try {
    v = await c.call("CL.ALL", args, rules[0].key);
  } catch (e) {
    return allFallback(c, e as Error, cost, rules);
  }
  if (!Array.isArray(v) || v.length !== rules.length + 1) throw new BadReplyError(v);
  const ad: AllDecision = { allowed: v[0] === 1, decisions: [], leases: [] };
  rules.forEach((r, i) => {
    const d = parseDecision(v[i + 1]);
    ad.decisions.push(d);
    ad.leases.push(r.limiter.rule === "ACQUIRE" && d.allowed ? new Lease(leaseId(v[i + 1]), r.key, cost, c, r.limiter.spec) : null);
  });
  return ad;
}

/** The failure policy for all: the local limiter checks every rule before consuming. */
function allFallback(c: Client, err: Error, cost: number, rules: Rule[]): AllDecision {
  const e = c.policy("CL.ALL", rules[0].key, err);
  if (e) throw e;
  const decisions = rules.map((r) => c.fallback(r.limiter.spec, r.key, cost, true));
  const allowed = decisions.every((d) => d.allowed);
  if (allowed && c.opts.failure === "local") rules.forEach((r, i) => (decisions[i] = c.fallback(r.limiter.spec, r.key, cost, false)));
  const leases = rules.map((r) => (allowed && r.limiter.rule === "ACQUIRE" ? new Lease("", r.key, cost, c, r.limiter.spec) : null));
  return { allowed, decisions, leases };
}

export { NEVER };
