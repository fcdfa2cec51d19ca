import { createHash } from "node:crypto";
import type { Cluster, Redis } from "ioredis";
import type { Client } from "./client";
import { Decision, parseDecision } from "./decision";
import { defaultKeyPrefix, sfString } from "./http";
import { WindowLimiter, WindowMode, dur } from "./limiters";

/** Hits as the rate-limit libraries count them: over the limit when denied. */
function hits(d: Decision, n = 1): number {
  if (!d.allowed) return d.limit + n;
  return Math.max(n, d.limit - d.remaining);
}

/** Deletes every key under prefix (SCAN + DEL, on every primary of a cluster). */
async function deletePrefix(redis: Redis | Cluster, prefix: string): Promise<void> {
  const nodes = "nodes" in redis && typeof (redis as Cluster).nodes === "function" && (redis as Cluster).isCluster ? (redis as Cluster).nodes("master") : [redis as Redis];
  const pattern = prefix.replace(/[*?[\]\\]/g, "\\$&") + "*";
  for (const node of nodes) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1000);
      cursor = next;
      for (const k of keys) await redis.del(k);
    } while (cursor !== "0");
  }
}

/**
 * With hits given back (express-rate-limit's decrement, for
 * skipFailedRequests and skipSuccessfulRequests), a client's count is the
 * FIXED window's plus an adjustment x in a value beside it (KEYS[2]),
 * expiring with the window, as express-rate-limit's own stores count: a hit
 * always counts (one denied at the limit makes x positive, as the library's
 * MemoryStore counts past the limit), a hit while x < 0 spends a hit given
 * back instead of asking the window, a give-back lowers x while the count is
 * above 0. Each is one script, so the count stays exact across processes;
 * the scripts answer the decision and the count.
 */
const ADJUSTED_HIT = `local x = tonumber(redis.call('GET', KEYS[2]) or '0')
local d = redis.call('CL.WINDOW', KEYS[1], ARGV[1], ARGV[2], x < 0 and 0 or 1, 'FIXED')
if x < 0 or d[1] == 0 then
  x = x + 1
  if x == 0 then redis.call('DEL', KEYS[2]) elseif d[5] > 0 then redis.call('SET', KEYS[2], x, 'PX', d[5]) end
end
local e = d[2] - d[3] + x
if e > d[2] then return {0, d[2], 0, d[4], d[5], e} end
return {1, d[2], d[2] - e, 0, d[5], e}`;
const ADJUSTED_READ = `local d = redis.call('CL.WINDOW', KEYS[1], ARGV[1], ARGV[2], 0, 'FIXED')
local x = tonumber(redis.call('GET', KEYS[2]) or '0')
local e = d[2] - d[3] + x
return {1, d[2], math.max(0, d[2] - e), 0, d[5], e}`;
const GIVE_BACK = `local d = redis.call('CL.WINDOW', KEYS[1], ARGV[1], ARGV[2], 0, 'FIXED')
local x = tonumber(redis.call('GET', KEYS[2]) or '0')
if d[2] - d[3] + x <= 0 or d[5] <= 0 then return 0 end
x = x - 1
if x == 0 then redis.call('DEL', KEYS[2]) else redis.call('SET', KEYS[2], x, 'PX', d[5]) end
return 1`;
const sha1 = (s: string) => createHash("sha1").update(s).digest("hex");

export interface RlserverStoreOptions {
  client: Client;
  /** The window algorithm (default "fixed", as express-rate-limit counts). */
  mode?: WindowMode;
  /** The limit; default the middleware's `limit` when it is a number. */
  limit?: number;
  /** The window; default the middleware's `windowMs`. */
  windowMs?: number;
  /** Policy name in the default prefix (default "express-rate-limit"). */
  policy?: string;
  /** Key prefix; default "rl:<policy>:<mode>:". */
  prefix?: string;
}

/** The express-rate-limit options the store reads at init. */
interface ErlOptions {
  windowMs: number;
  limit: number | unknown;
  skipFailedRequests?: boolean;
  skipSuccessfulRequests?: boolean;
}

/**
 * An express-rate-limit Store on CL.WINDOW: each increment is one decision
 * of the server, so the count, the 429 and the reset are the server's,
 * exact across processes. Denied hits are not counted (the server consumes
 * nothing when it denies): totalHits is limit + 1 then. With
 * skipFailedRequests or skipSuccessfulRequests (fixed windows only), hits
 * are given back by decrement and counted as express-rate-limit's own
 * stores count them (see ADJUSTED_HIT): each call is one script (EVALSHA),
 * the key "<prefix>{<key>}" and its adjustment "<prefix>{<key>}:adj", one
 * hash slot in a cluster.
 */
export class RlserverStore {
  readonly localKeys = false;
  prefix: string;
  private readonly c: Client;
  private readonly mode: WindowMode;
  private readonly policy: string;
  private limiter?: WindowLimiter;
  private configError?: Error;
  private limit?: number;
  private windowMs?: number;
  /** Hits can be given back (an adjustment beside the window, scripts). */
  private adjusted = false;

  constructor(o: RlserverStoreOptions) {
    this.c = o.client;
    this.mode = o.mode ?? "fixed";
    this.policy = o.policy ?? "express-rate-limit";
    sfString(this.policy);
    this.prefix = o.prefix ?? defaultKeyPrefix(this.policy, this.mode);
    this.limit = o.limit;
    this.windowMs = o.windowMs;
    if (this.limit !== undefined && this.windowMs !== undefined) this.limiter = this.c.window(this.mode, this.limit, this.windowMs);
  }

  /** Takes the limit and the window from the middleware's options. */
  init(options: ErlOptions): void {
    const limit = this.limit ?? (typeof options.limit === "number" ? options.limit : undefined);
    const windowMs = this.windowMs ?? options.windowMs;
    const giveBack = Boolean(options.skipFailedRequests || options.skipSuccessfulRequests);
    if (limit === undefined || !(limit > 0)) {
      this.configError = new Error("rlserver: RlserverStore needs a numeric limit (pass `limit` to the store when the middleware's is a function)");
    } else if (giveBack && this.mode !== "fixed") {
      // A hit given back is counted per window: fixed windows only.
      this.configError = new Error(`rlserver: RlserverStore supports skipFailedRequests/skipSuccessfulRequests on fixed windows only, not ${this.mode}`);
    } else {
      this.limiter = this.c.window(this.mode, limit, windowMs);
      this.adjusted = giveBack;
    }
    if (this.configError) this.c.report({ command: "init", key: "", error: this.configError, mode: "error", config: true });
  }

  private window(): WindowLimiter {
    if (this.configError) throw this.configError;
    if (!this.limiter) throw new Error("rlserver: RlserverStore used before init");
    return this.limiter;
  }

  /** The server's key of a client's key. */
  private keyOf(key: string): string {
    return this.adjusted ? `${this.prefix}{${key}}` : this.prefix + key;
  }

  /** Runs a script on key's window and adjustment: its reply. */
  private async script(src: string, key: string): Promise<unknown> {
    const w = this.window();
    const k = this.keyOf(key);
    const args = [2, k, k + ":adj", w.limit, dur(w.windowMs)];
    try {
      return await this.c.call("EVALSHA", [sha1(src), ...args], k);
    } catch (e) {
      if (!(e as Error).message.startsWith("NOSCRIPT")) throw e;
      return this.c.call("EVAL", [src, ...args], k);
    }
  }

  /** The decision and the count for a hit (n = 1) or a read (n = 0), under the client's failure policy. */
  private async decide(key: string, n: 0 | 1): Promise<{ d: Decision; count: number }> {
    const w = this.window();
    if (!this.adjusted) {
      const d = await w.decide(this.keyOf(key), n);
      return { d, count: n === 1 ? hits(d) : d.limit - d.remaining };
    }
    let v: unknown;
    try {
      v = await this.script(n === 1 ? ADJUSTED_HIT : ADJUSTED_READ, key);
    } catch (e) {
      const d = this.c.fail("CL.WINDOW", this.keyOf(key), e as Error, w.spec, n);
      return { d, count: n === 1 ? hits(d) : d.limit - d.remaining };
    }
    const d = parseDecision(v);
    return { d, count: (v as number[])[5] };
  }

  async get(key: string): Promise<{ totalHits: number; resetTime: Date | undefined } | undefined> {
    const { d, count } = await this.decide(key, 0);
    if (count <= 0) return undefined;
    return { totalHits: count, resetTime: new Date(Date.now() + d.resetAfterMs) };
  }

  async increment(key: string): Promise<{ totalHits: number; resetTime: Date | undefined }> {
    const { d, count } = await this.decide(key, 1);
    return { totalHits: count, resetTime: new Date(Date.now() + d.resetAfterMs) };
  }

  /**
   * Gives a hit back (skipFailedRequests, skipSuccessfulRequests), down to
   * a count of 0; nothing once the window has ended or was reset.
   */
  async decrement(key: string): Promise<void> {
    this.window();
    if (this.adjusted) await this.script(GIVE_BACK, key);
  }

  async resetKey(key: string): Promise<void> {
    const k = this.keyOf(key);
    await (this.adjusted ? this.c.redis.del(k, k + ":adj") : this.c.redis.del(k));
  }

  async resetAll(): Promise<void> {
    await deletePrefix(this.c.redis, this.prefix);
  }

  /** The ioredis client belongs to the application, which closes it. */
  async shutdown(): Promise<void> {}
}

export interface FastifyStoreOptions {
  mode?: WindowMode;
  policy?: string;
  prefix?: string;
}

type IncrCallback = (err: Error | null, res?: { current: number; ttl: number }) => void;

/**
 * A @fastify/rate-limit store class over the client:
 * `fastify.register(rateLimit, { store: fastifyStore(client), max, timeWindow })`.
 * Each incr is one CL.WINDOW decision; a route's own limit (config.rateLimit)
 * gets its own keys, "<prefix><METHOD><url>-<key>".
 */
export interface FastifyStore {
  incr(key: string, cb: IncrCallback, timeWindow: number, max: number): void;
  read(key: string, cb: IncrCallback, timeWindow: number, max: number): void;
  child(routeOptions: unknown): FastifyStore;
}

export function fastifyStore(client: Client, o: FastifyStoreOptions = {}): new (options?: unknown) => FastifyStore {
  const mode = o.mode ?? "fixed";
  const policy = o.policy ?? "fastify-rate-limit";
  sfString(policy);
  const base = o.prefix ?? defaultKeyPrefix(policy, mode);
  return class RlserverFastifyStore {
    readonly prefix: string;
    private limiters = new Map<string, WindowLimiter>();
    constructor(_options?: unknown, prefix = base) {
      this.prefix = prefix;
    }
    private limiter(max: number, timeWindow: number): WindowLimiter {
      const id = `${max}/${timeWindow}`;
      let l = this.limiters.get(id);
      if (!l) {
        l = client.window(mode, max, timeWindow);
        this.limiters.set(id, l);
      }
      return l;
    }
    incr(key: string, cb: IncrCallback, timeWindow: number, max: number): void {
      this.limiter(max, timeWindow)
        .decide(this.prefix + key, 1)
        .then((d) => cb(null, { current: hits(d), ttl: d.resetAfterMs }), (e: Error) => cb(e));
    }
    read(key: string, cb: IncrCallback, timeWindow: number, max: number): void {
      this.limiter(max, timeWindow)
        .decide(this.prefix + key, 0)
        .then((d) => cb(null, { current: d.limit - d.remaining, ttl: d.resetAfterMs }), (e: Error) => cb(e));
    }
    child(opts: unknown): RlserverFastifyStore {
      const routeOptions = opts as { routeInfo?: { method?: string; url?: string }; method?: string | string[]; url?: string };
      const method = routeOptions.routeInfo?.method ?? String(routeOptions.method ?? "");
      const url = routeOptions.routeInfo?.url ?? routeOptions.url ?? "";
      return new RlserverFastifyStore(undefined, `${this.prefix}${method}${url}-`);
    }
  };
}
