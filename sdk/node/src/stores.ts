import type { Cluster, Redis } from "ioredis";
import type { Client } from "./client";
import { Decision } from "./decision";
import { defaultKeyPrefix, sfString } from "./http";
import { WindowLimiter, WindowMode } from "./limiters";

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
 * nothing when it denies): totalHits is limit + 1 then.
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
    if (limit === undefined || !(limit > 0)) {
      this.configError = new Error("rlserver: RlserverStore needs a numeric limit (pass `limit` to the store when the middleware's is a function)");
    } else if (options.skipFailedRequests || options.skipSuccessfulRequests) {
      // They take a hit back (decrement); a window on the server cannot.
      this.configError = new Error("rlserver: RlserverStore does not support skipFailedRequests/skipSuccessfulRequests (the server's windows cannot give a hit back)");
    } else {
      this.limiter = this.c.window(this.mode, limit, windowMs);
    }
    if (this.configError) this.c.report({ command: "init", key: "", error: this.configError, mode: "error", config: true });
  }

  private window(): WindowLimiter {
    if (this.configError) throw this.configError;
    if (!this.limiter) throw new Error("rlserver: RlserverStore used before init");
    return this.limiter;
  }

  async get(key: string): Promise<{ totalHits: number; resetTime: Date | undefined } | undefined> {
    const d = await this.window().decide(this.prefix + key, 0);
    const used = d.limit - d.remaining;
    if (used <= 0) return undefined;
    return { totalHits: used, resetTime: new Date(Date.now() + d.resetAfterMs) };
  }

  async increment(key: string): Promise<{ totalHits: number; resetTime: Date | undefined }> {
    const d = await this.window().decide(this.prefix + key, 1);
    return { totalHits: hits(d), resetTime: new Date(Date.now() + d.resetAfterMs) };
  }

  /** Refused at init (see skipFailedRequests): nothing to give back. */
  async decrement(_key: string): Promise<void> {}

  async resetKey(key: string): Promise<void> {
    await this.c.redis.del(this.prefix + key);
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
