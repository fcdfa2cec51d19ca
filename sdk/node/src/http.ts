import type { IncomingMessage, ServerResponse } from "node:http";
import type { Client } from "./client";
import { Decision, NEVER } from "./decision";
import { Concurrency, Lease, Limiter } from "./limiters";

/**
 * An RFC 8941 sf-string: printable ASCII only, with " and \ escaped. Any
 * other character cannot be carried, so it is refused.
 */
export function sfString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) throw new RangeError(`rlserver: policy name ${JSON.stringify(s)}: an RFC 8941 string holds printable ASCII only (code ${c} at ${i})`);
    if (c === 0x22 || c === 0x5c) out += "\\";
    out += s[i];
  }
  return out + '"';
}

function ceilSeconds(ms: number): number {
  return ms <= 0 ? 0 : Math.ceil(ms / 1000);
}

/**
 * The response fields for decision d under the named policy
 * (draft-ietf-httpapi-ratelimit-headers-11, as the other SDKs write them):
 * RateLimit-Policy, RateLimit, Retry-After when denied (unless it can never
 * pass) and, with x, X-RateLimit-Limit/-Remaining/-Reset. Seconds round up.
 */
export function headerFields(policy: string, windowMs: number, d: Decision, x = false): Record<string, string> {
  const name = sfString(policy);
  const reset = String(ceilSeconds(d.resetAfterMs));
  const h: Record<string, string> = {
    "RateLimit-Policy": `${name};q=${d.limit};w=${Math.max(1, ceilSeconds(windowMs))}`,
    RateLimit: `${name};r=${d.remaining};t=${reset}`,
  };
  if (!d.allowed && d.retryAfterMs !== NEVER) h["Retry-After"] = String(Math.max(1, ceilSeconds(d.retryAfterMs)));
  if (x) {
    h["X-RateLimit-Limit"] = String(d.limit);
    h["X-RateLimit-Remaining"] = String(d.remaining);
    h["X-RateLimit-Reset"] = reset;
  }
  return h;
}

/** Sets headerFields on a Node response (express, plain node:http, ...). */
export function setHeaders(res: ServerResponse, policy: string, windowMs: number, d: Decision, x = false): void {
  for (const [k, v] of Object.entries(headerFields(policy, windowMs, d, x))) res.setHeader(k, v);
}

/** Keys a request by its client address (express's req.ip, else the socket's). */
export function keyByIp(req: IncomingMessage): string {
  return (req as IncomingMessage & { ip?: string }).ip ?? req.socket.remoteAddress ?? "";
}

export interface MiddlewareOptions {
  limiter: Limiter;
  /** The policy name in the RateLimit fields (default "default"). */
  policy?: string;
  /** The limited key of a request; "" lets it through unlimited. Default keyByIp. */
  key?: (req: IncomingMessage) => string | Promise<string>;
  /** Put before every key; default "rl:<policy>:<kind>:", so limiters never share a key. */
  keyPrefix?: string;
  /** Send key()'s result as it is, without keyPrefix. */
  rawKeys?: boolean;
  /** Units a request takes (default 1). */
  cost?: (req: IncomingMessage) => number;
  /** Also set X-RateLimit-Limit, -Remaining and -Reset. */
  xRateLimit?: boolean;
  /** Answers a denied request, headers already set (default 429 with a short text). */
  denied?: (req: IncomingMessage, res: ServerResponse, d: Decision) => void;
  /** Answers when the limiter throws (default 503; configuration errors are logged and passed to onError first). */
  error?: (req: IncomingMessage, res: ServerResponse, err: Error) => void;
}

type Next = (err?: unknown) => void;

/** The default key prefix of a limiter under a policy: "rl:<policy>:<kind>:". */
export function defaultKeyPrefix(policy: string, kind: string): string {
  return `rl:${policy}:${kind}:`;
}

/**
 * Connect/express middleware: each request's key is decided by the limiter
 * (a Concurrency limiter holds a lease until the response ends), the
 * RateLimit fields are set, and a denied request gets 429 with
 * Retry-After. Throws at once if the policy name is not an RFC 8941 string.
 */
export function middleware(o: MiddlewareOptions): (req: IncomingMessage, res: ServerResponse, next: Next) => void {
  const policy = o.policy ?? "default";
  sfString(policy);
  const prefix = o.rawKeys ? "" : (o.keyPrefix ?? defaultKeyPrefix(policy, o.limiter.kind));
  const keyOf = o.key ?? keyByIp;
  const denied =
    o.denied ??
    ((_req, res) => {
      res.statusCode = 429;
      res.setHeader("Content-Type", "text/plain; charset=utf-8");
      res.end("rate limit exceeded\n");
    });
  const error =
    o.error ??
    ((_req, res) => {
      res.statusCode = 503;
      res.setHeader("Content-Type", "text/plain; charset=utf-8");
      res.end("rate limiter unavailable\n");
    });
  return (req, res, next) => {
    (async () => {
      const k = await keyOf(req);
      if (k === "") return next();
      const key = prefix + k;
      const n = o.cost ? o.cost(req) : 1;
      let d: Decision;
      if (o.limiter instanceof Concurrency) {
        let lease: Lease | null;
        ({ lease, decision: d } = await o.limiter.acquire(key, n));
        if (lease) {
          const held = lease;
          let released = false;
          const release = () => {
            if (!released) {
              released = true;
              held.release().catch(() => false);
            }
          };
          res.once("finish", release);
          res.once("close", release);
        }
      } else {
        d = await o.limiter.decide(key, n);
      }
      setHeaders(res, policy, o.limiter.windowMs, d, o.xRateLimit);
      if (!d.allowed) return denied(req, res, d);
      next();
    })().catch((e: Error) => {
      try {
        error(req, res, e);
      } catch (e2) {
        next(e2);
      }
    });
  };
}

export type { Client };
