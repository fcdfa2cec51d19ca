package io.rlserver;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A limiter: a decision for n units of a key, and its policy window (the
 * time to go from empty to the full limit) for RateLimit-Policy.
 */
public abstract class Limiter {
    /** What the local fallback needs: an id of the parameters, the limit, the window. */
    record Spec(String id, long limit, Duration window) { }

    final Client c;
    final String cmd;
    final String rule;
    final List<String> params;
    final Spec spec;

    Limiter(Client c, String cmd, String rule, long limit, Duration window, String... params) {
        this.c = c;
        this.cmd = cmd;
        this.rule = rule;
        this.params = List.of(params);
        this.spec = new Spec(rule + " " + String.join(" ", params), limit, window);
    }

    /** Decides n units of key (a Concurrency limiter acquires and forgets its lease). */
    public abstract Decision decide(String key, long n) throws IOException;

    /** The policy window. */
    public Duration window() { return spec.window(); }

    /**
     * The algorithm: tokenbucket, throttle, leakybucket, fixed, sliding, log
     * or concurrency. RateLimitFilter puts it in its default key prefix, so
     * that limiters of different kinds never share a key.
     */
    public String kind() { return rule.equals("ACQUIRE") ? "concurrency" : rule.toLowerCase(java.util.Locale.ROOT); }

    /** This limiter applied to key, as a rule of Client.all. */
    public Rule rule(String key) { return new Rule(this, key); }

    Decision send(String key, long n, String... extra) throws IOException {
        List<Object> args = new ArrayList<>(3 + params.size() + extra.length);
        args.add(cmd);
        args.add(key);
        args.addAll(params);
        args.add(n);
        for (String e : extra) args.add(e);
        Object v;
        try {
            v = c.call(args.toArray());
        } catch (IOException | RespException e) {
            return c.fail(cmd, key, e, spec, n);
        }
        return Decision.parse(v);
    }

    static String dur(Duration d) {
        long ms = d.toMillis();
        if (ms == 0 && !d.isZero() && !d.isNegative()) ms = 1;
        return ms + "ms";
    }

    static Duration refill(long limit, long rate, Duration period) {
        if (rate <= 0) return period;
        return Duration.ofNanos((long) ((double) limit / rate * period.toNanos()));
    }

    /** Token bucket: capacity tokens refilled at rate per period (CL.TOKENBUCKET), with reservations. */
    public static final class TokenBucket extends Limiter {
        TokenBucket(Client c, long capacity, long rate, Duration period) {
            super(c, "CL.TOKENBUCKET", "TOKENBUCKET", capacity, refill(capacity, rate, period), "" + capacity, "" + rate, dur(period));
        }
        public Decision allow(String key) throws IOException { return send(key, 1); }
        public Decision allowN(String key, long n) throws IOException { return send(key, n); }
        @Override public Decision decide(String key, long n) throws IOException { return send(key, n); }
        /** Takes n tokens now if they exist within maxWait: admitted, retryAfter is the wait before acting. */
        public Decision reserve(String key, long n, Duration maxWait) throws IOException { return send(key, n, "RESERVE", dur(maxWait)); }
    }

    /** GCRA (redis-cell's CL.THROTTLE parameters), sent as a one-rule CL.ALL for ms precision. */
    public static final class Throttle extends Limiter {
        Throttle(Client c, long maxBurst, long count, Duration period) {
            super(c, "CL.THROTTLE", "THROTTLE", maxBurst + 1, refill(maxBurst + 1, count, period), "" + maxBurst, "" + count, dur(period));
        }
        public Decision allow(String key) throws IOException { return allowN(key, 1); }
        public Decision allowN(String key, long n) throws IOException { return c.all(n, rule(key)).decisions().get(0); }
        @Override public Decision decide(String key, long n) throws IOException { return allowN(key, n); }
    }

    /** Leaky bucket (CL.LEAKYBUCKET): an admitted decision's retryAfter is the delay before acting. */
    public static final class LeakyBucket extends Limiter {
        LeakyBucket(Client c, long capacity, long rate, Duration period) {
            super(c, "CL.LEAKYBUCKET", "LEAKYBUCKET", capacity, refill(capacity, rate, period), "" + capacity, "" + rate, dur(period));
        }
        public Decision allow(String key) throws IOException { return send(key, 1); }
        public Decision allowN(String key, long n) throws IOException { return send(key, n); }
        @Override public Decision decide(String key, long n) throws IOException { return send(key, n); }
    }

    /** CL.WINDOW's algorithm. */
    public enum WindowMode { FIXED, SLIDING, LOG }

    /** At most limit units per window (CL.WINDOW). */
    public static final class Window extends Limiter {
        private final String mode;
        Window(Client c, WindowMode mode, long limit, Duration window) {
            super(c, "CL.WINDOW", mode.name(), limit, window, "" + limit, dur(window));
            this.mode = mode.name();
        }
        public Decision allow(String key) throws IOException { return send(key, 1, mode); }
        public Decision allowN(String key, long n) throws IOException { return send(key, n, mode); }
        @Override public Decision decide(String key, long n) throws IOException { return send(key, n, mode); }
    }
}
