/** retryAfterMs of a request that can never be admitted (its cost exceeds the limit). */
export const NEVER = -1;

/** The server's five-integer decision reply, typed. */
export interface Decision {
  /** Admitted (and consumed). */
  allowed: boolean;
  /** The most that could ever be admitted at once. */
  limit: number;
  /** Units that could be admitted right now. */
  remaining: number;
  /** Denied: ms before retrying (NEVER: cannot succeed). Admitted: delay before acting (reservations, leaky bucket). */
  retryAfterMs: number;
  /** ms until the key is back to its fresh state. */
  resetAfterMs: number;
  /** Decided by the failure policy, not the server. */
  fallback: boolean;
}

/** Thrown by the scoped forms when the limiter denies. */
export class LimitedError extends Error {
  readonly decision: Decision;
  constructor(d: Decision) {
    super("rlserver: rate limited");
    this.name = "LimitedError";
    this.decision = d;
  }
}

/** The server answered something that is not a decision. */
export class BadReplyError extends Error {
  constructor(v: unknown) {
    super(`rlserver: unexpected reply ${JSON.stringify(v)}`);
    this.name = "BadReplyError";
  }
}

/** Reads the first five integers of a decision array. */
export function parseDecision(v: unknown): Decision {
  if (!Array.isArray(v) || v.length < 5) throw new BadReplyError(v);
  const [a, limit, remaining, retryAfterMs, resetAfterMs] = v;
  if (typeof a !== "number" || typeof limit !== "number" || typeof remaining !== "number" || typeof retryAfterMs !== "number" || typeof resetAfterMs !== "number") throw new BadReplyError(v);
  return { allowed: a === 1, limit, remaining, retryAfterMs, resetAfterMs, fallback: false };
}
