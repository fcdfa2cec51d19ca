import { Command } from "ioredis";
import type { Cluster, Redis } from "ioredis";
import { Deadlines } from "./deadlines";
import { Decision, NEVER, parseDecision } from "./decision";
import { LocalStore, Spec } from "./local";
import { AllDecision, Concurrency, LeakyBucket, Rule, Throttle, TokenBucket, WindowLimiter, WindowMode, all } from "./limiters";

/** What a limiter answers while the server is unreachable. */
export type FailureMode = "error" | "open" | "closed" | "local";

/** A call that failed for a reason other than the caller's own. */
export interface ErrorEvent {
  command: string;
  key: string;
  error: Error;
  /** What answered instead ("error" for a configuration error). */
  mode: FailureMode;
  /**
   * A configuration error: wrong or missing password (WRONGPASS, NOAUTH),
   * missing permission (NOPERM), a key holding another limiter's state
   * (WRONGTYPE), a server without the command. No failure policy hides these.
   */
  config: boolean;
}

export interface Options {
  /** Bounds each call, connecting included (ms; 0: none). Default 0. */
  timeoutMs?: number;
  /** The policy while the server is unreachable. Default "error". */
  failure?: FailureMode;
  /** Called for each answer of the failure policy and each configuration error. */
  onError?: (e: ErrorEvent) => void;
  /** retryAfterMs of a fail-closed decision (default 1000). */
  closedRetryAfterMs?: number;
  /** Logs configuration errors (default console.error). */
  log?: (msg: string) => void;
}

/** A connection-level or timeout failure of the SDK's own making. */
export class TimeoutError extends Error {
  constructor(ms: number, what: string) {
    super(`rlserver: ${what} did not complete within ${ms} ms`);
    this.name = "TimeoutError";
  }
}

const UNREACHABLE_REPLIES = ["LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN"];
const CONFIG_REPLIES = ["WRONGTYPE", "WRONGPASS", "NOAUTH", "NOPERM", "ERR unknown command", "ERR AUTH", "ERR invalid password"];

function isReplyError(err: Error): boolean {
  return err.name === "ReplyError";
}

/** A configuration error: reported loudly, never answered by the policy. */
export function misconfigured(err: Error): boolean {
  return CONFIG_REPLIES.some((p) => err.message.startsWith(p));
}

/** A transport failure (the policy applies), as opposed to an error about the request. */
export function unreachable(err: Error): boolean {
  if (misconfigured(err)) return false;
  if (isReplyError(err)) return UNREACHABLE_REPLIES.some((p) => err.message.startsWith(p));
  return true;
}

/** CRC16/XMODEM of a key's hash tag, modulo 16384: Redis Cluster's slot. */
export function keySlot(key: string): number {
  let s = key;
  const open = key.indexOf("{");
  if (open >= 0) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) s = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const b of Buffer.from(s)) {
    crc ^= b << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

type Conn = Redis | Cluster;

/** What the clients sharing one connection share of it. */
interface ConnState {
  lastError?: Error;
  ready?: Promise<void>;
}

/** Makes limiters over an ioredis client (standalone Redis or Cluster). */
export class Client {
  readonly redis: Conn;
  readonly opts: Required<Omit<Options, "onError">> & Pick<Options, "onError">;
  /** @internal */ readonly local: LocalStore;
  /** @internal */ state: ConnState;
  /** @internal The deadlines of this client's calls in flight (none without a timeout). */
  readonly deadlines: Deadlines | undefined;
  private readonly cluster: boolean;

  constructor(redis: Conn, opts: Options = {}, shared?: { local: LocalStore; state: ConnState }) {
    this.redis = redis;
    this.opts = {
      timeoutMs: opts.timeoutMs ?? 0,
      failure: opts.failure ?? "error",
      onError: opts.onError,
      closedRetryAfterMs: opts.closedRetryAfterMs && opts.closedRetryAfterMs > 0 ? opts.closedRetryAfterMs : 1000,
      log: opts.log ?? ((m: string) => console.error(m)),
    };
    this.local = shared?.local ?? new LocalStore();
    this.cluster = (redis as Cluster).isCluster === true;
    this.deadlines = this.opts.timeoutMs > 0 ? new Deadlines(this.opts.timeoutMs, (name) => this.expired(name)) : undefined;
    if (shared) {
      this.state = shared.state;
    } else {
      // ioredis reports a failed AUTH on connect only as an 'error' event
      // (then reconnects): keep the last one, so that a call waiting for the
      // connection can tell a wrong password from a server that is away.
      const state: ConnState = {};
      this.state = state;
      redis.on("error", (e: Error) => {
        state.lastError = e;
      });
      redis.on("ready", () => {
        state.lastError = undefined;
      });
    }
  }

  /** A client sharing the connection and the local fallback state, with other options. */
  withOptions(opts: Options): Client {
    return new Client(this.redis, opts, { local: this.local, state: this.state });
  }

  /** A token bucket: capacity tokens, refilled at rate per periodMs. */
  tokenBucket(capacity: number, rate: number, periodMs: number): TokenBucket {
    return new TokenBucket(this, capacity, rate, periodMs);
  }
  /** GCRA with CL.THROTTLE's parameters: maxBurst + 1 at once, count per periodMs. */
  throttle(maxBurst: number, count: number, periodMs: number): Throttle {
    return new Throttle(this, maxBurst, count, periodMs);
  }
  /** A leaky bucket of capacity units draining at rate per periodMs. */
  leakyBucket(capacity: number, rate: number, periodMs: number): LeakyBucket {
    return new LeakyBucket(this, capacity, rate, periodMs);
  }
  /** At most limit units per windowMs: "fixed", "sliding" (an estimate) or "log" (exact). */
  window(mode: WindowMode, limit: number, windowMs: number): WindowLimiter {
    return new WindowLimiter(this, mode, limit, windowMs);
  }
  /** At most limit units held at once, each lease expiring after leaseMs unless renewed. */
  concurrency(limit: number, leaseMs: number): Concurrency {
    return new Concurrency(this, limit, leaseMs);
  }
  /** Checks and consumes cost units on every rule atomically (CL.ALL); in a cluster, one hash tag. */
  all(cost: number, rules: Rule[]): Promise<AllDecision> {
    return all(this, cost, rules);
  }

  /**
   * Sends PING under the timeout, so that a wrong or missing password is
   * found at start. A configuration error is logged and passed to onError.
   */
  async check(): Promise<void> {
    try {
      await this.call("PING", [], "");
    } catch (e) {
      const err = e as Error;
      if (misconfigured(err)) this.report({ command: "PING", key: "", error: err, mode: "error", config: true });
      throw err;
    }
  }

  /**
   * @internal Runs one command, routed by key in a cluster, bounded by the
   * timeout. On a ready connection the command is sent at once and its
   * deadline joins the client's queue (no timer, no promise of its own);
   * while (re)connecting, the call waits for the connection under a timer of
   * its own and sends nothing once the timeout has answered.
   */
  call(name: string, args: (string | number)[], key: string): Promise<unknown> {
    if (this.redis.status !== "ready") return this.callWhenReady(name, args, key);
    const cmd = new Command(name, args);
    const reject = cmd.reject;
    this.send(cmd, key);
    if (this.deadlines !== undefined && !cmd.isSettled) this.deadlines.add(cmd, reject);
    return cmd.promise;
  }

  private send(cmd: Command, key: string): void {
    if (this.cluster && key !== "") (cmd as unknown as { slot: number }).slot = keySlot(key);
    (this.redis as Redis).sendCommand(cmd);
  }

  private async callWhenReady(name: string, args: (string | number)[], key: string): Promise<unknown> {
    const ms = this.opts.timeoutMs;
    let expired = false;
    const sent = this.ready().then(() => {
      if (expired) throw new TimeoutError(ms, name); // answered already: never sent late
      const cmd = new Command(name, args);
      this.send(cmd, key);
      return cmd.promise;
    });
    if (!(ms > 0)) return sent;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        expired = true;
        reject(this.expired(name));
      }, ms);
    });
    try {
      return await Promise.race([sent, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The error a call past its deadline gets: a wrong password found while connecting, else a TimeoutError. */
  private expired(name: string): Error {
    const last = this.state.lastError;
    return last && misconfigured(last) ? last : new TimeoutError(this.opts.timeoutMs, name);
  }

  /**
   * Waits for the connection rather than queueing the command: with
   * ioredis's offline queue a command queued while the server is away would
   * run (and consume) after the caller was answered by the policy. The wait
   * ends at the next connection error (so a refused connection answers at
   * once) and is shared by the calls waiting meanwhile.
   */
  private ready(): Promise<void> {
    const st = this.state;
    if (st.ready) return st.ready;
    const r = this.redis;
    if (r.status === "wait") r.connect().catch(() => undefined);
    st.ready = new Promise<void>((resolve, reject) => {
      const done = (err?: Error) => {
        r.off("ready", onReady);
        r.off("error", onError);
        r.off("end", onEnd);
        st.ready = undefined;
        if (err) reject(err);
        else resolve();
      };
      const onReady = () => done();
      const onError = (e: Error) => done(e);
      const onEnd = () => done(new Error("rlserver: the connection is closed"));
      if (r.status === "end") return onEnd();
      r.on("ready", onReady);
      r.on("error", onError);
      r.on("end", onEnd);
    });
    st.ready.catch(() => undefined);
    return st.ready;
  }

  /** @internal Passes e to onError and logs a configuration error. */
  report(e: ErrorEvent): void {
    if (e.config) this.opts.log(`rlserver: configuration error on ${e.command} "${e.key}": ${e.error.message}`);
    this.opts.onError?.(e);
  }

  /**
   * @internal Returns err when the caller must get it (a configuration error
   * is reported first), or undefined when the failure policy answers.
   */
  policy(command: string, key: string, err: Error): Error | undefined {
    if (misconfigured(err)) {
      this.report({ command, key, error: err, mode: "error", config: true });
      return err;
    }
    if (!unreachable(err) || this.opts.failure === "error") return err;
    this.report({ command, key, error: err, mode: this.opts.failure, config: false });
    return undefined;
  }

  /** @internal The failure policy's decision, or err thrown. */
  fail(command: string, key: string, err: Error, s: Spec, n: number): Decision {
    const e = this.policy(command, key, err);
    if (e) throw e;
    return this.fallback(s, key, n, false);
  }

  /** @internal */
  fallback(s: Spec, key: string, n: number, peek: boolean): Decision {
    switch (this.opts.failure) {
      case "open":
        return { allowed: true, limit: s.limit, remaining: s.limit, retryAfterMs: 0, resetAfterMs: 0, fallback: true };
      case "closed": {
        const r = this.opts.closedRetryAfterMs;
        return { allowed: false, limit: s.limit, remaining: 0, retryAfterMs: r, resetAfterMs: r, fallback: true };
      }
      default:
        return this.local.take(s, key, n, peek);
    }
  }

  /** @internal Sends a decision command and parses the reply, under the policy. */
  decide(command: string, key: string, args: (string | number)[], s: Spec, n: number): Promise<Decision> {
    return this.call(command, args, key).then(parseDecision, (e: Error) => this.fail(command, key, e, s, n));
  }
}

export { NEVER };
