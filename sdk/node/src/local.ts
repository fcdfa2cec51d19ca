import { Decision, NEVER } from "./decision";

/** What the local fallback knows of a limiter. */
export interface Spec {
  /** The limiter's parameters, so that two limiters never share local state. */
  id: string;
  limit: number;
  /** ms to go from empty to the full limit. */
  windowMs: number;
}

const MAX_LOCAL_KEYS = 100_000;

/**
 * The in-process fallback ("local"): a token bucket per limiter and key of
 * the limiter's limit refilled over its window, and local lease counts.
 * Per process and approximate by design; it answers only while the server
 * is away.
 */
export class LocalStore {
  private buckets = new Map<string, { tokens: number; at: number }>();
  private held = new Map<string, number>();
  constructor(private now: () => number = () => performance.now()) {}

  take(s: Spec, key: string, n: number, peek: boolean): Decision {
    const now = this.now();
    const id = s.id + "\0" + key;
    let b = this.buckets.get(id);
    if (!b) {
      if (this.buckets.size >= MAX_LOCAL_KEYS) this.prune(s, now);
      b = { tokens: s.limit, at: now };
      this.buckets.set(id, b);
    }
    const perUnit = s.windowMs / s.limit;
    if (now > b.at) b.tokens = Math.min(s.limit, b.tokens + (now - b.at) / perUnit);
    b.at = now;
    const d: Decision = { allowed: false, limit: s.limit, remaining: 0, retryAfterMs: 0, resetAfterMs: 0, fallback: true };
    if (n > s.limit) d.retryAfterMs = NEVER;
    else if (b.tokens >= n) {
      d.allowed = true;
      if (!peek) b.tokens -= n;
    } else d.retryAfterMs = Math.ceil((n - b.tokens) * perUnit);
    d.remaining = Math.floor(b.tokens);
    d.resetAfterMs = Math.ceil((s.limit - b.tokens) * perUnit);
    return d;
  }

  private prune(s: Spec, now: number): void {
    for (const [id, b] of this.buckets) if (now - b.at >= s.windowMs) this.buckets.delete(id);
  }

  acquire(s: Spec, key: string, n: number): boolean {
    const id = s.id + "\0" + key;
    const h = this.held.get(id) ?? 0;
    if (h + n > s.limit) return false;
    this.held.set(id, h + n);
    return true;
  }

  release(s: Spec, key: string, n: number): void {
    const id = s.id + "\0" + key;
    const h = (this.held.get(id) ?? 0) - n;
    if (h <= 0) this.held.delete(id);
    else this.held.set(id, h);
  }
}
