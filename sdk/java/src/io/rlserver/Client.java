package io.rlserver;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Makes typed limiters over a Redis connection (a Pool or a Cluster) with a
 * failure policy. Thread-safe.
 */
public final class Client {
    final Redis redis;
    final Options opts;
    final LocalStore local;

    public Client(Redis redis, Options opts) { this(redis, opts, new LocalStore(System::nanoTime)); }

    /** For tests: the local fallback on a given clock (nanoseconds). */
    Client(Redis redis, Options opts, java.util.function.LongSupplier nanos) { this(redis, opts, new LocalStore(nanos)); }

    private Client(Redis redis, Options opts, LocalStore local) {
        this.redis = redis;
        this.opts = opts == null ? Options.defaults() : opts;
        this.local = local;
    }

    /** A client sharing the connection and local fallback state, with other options (a per-limiter policy). */
    public Client withOptions(Options o) { return new Client(redis, o, local); }

    public Redis redis() { return redis; }
    public Options options() { return opts; }

    public Limiter.TokenBucket tokenBucket(long capacity, long rate, Duration period) { return new Limiter.TokenBucket(this, capacity, rate, period); }
    public Limiter.Throttle throttle(long maxBurst, long count, Duration period) { return new Limiter.Throttle(this, maxBurst, count, period); }
    public Limiter.LeakyBucket leakyBucket(long capacity, long rate, Duration period) { return new Limiter.LeakyBucket(this, capacity, rate, period); }
    public Limiter.Window window(Limiter.WindowMode mode, long limit, Duration window) { return new Limiter.Window(this, mode, limit, window); }
    public Concurrency concurrency(long limit, Duration lease) { return new Concurrency(this, limit, lease); }

    Object call(Object... args) throws IOException {
        return redis.call((int) Math.min(Integer.MAX_VALUE, opts.timeout().toMillis()), args);
    }

    /** Whether e is the server being unreachable (the policy applies) rather than an error about the request. */
    static boolean unreachable(Exception e) {
        if (e instanceof RespException r) {
            String c = r.code();
            return c.equals("LOADING") || c.equals("CLUSTERDOWN") || c.equals("TRYAGAIN") || c.equals("MASTERDOWN");
        }
        return e instanceof IOException;
    }

    /**
     * Whether e says the set-up is wrong (wrong or missing password, no
     * permission, a key holding another limiter's state, a server without
     * the command): reported loudly, never answered by the policy.
     */
    static boolean misconfigured(Exception e) {
        if (!(e instanceof RespException r)) return false;
        String c = r.code(), m = r.getMessage();
        return c.equals("WRONGTYPE") || c.equals("WRONGPASS") || c.equals("NOAUTH") || c.equals("NOPERM")
            || m.startsWith("ERR unknown command") || m.startsWith("ERR AUTH");
    }

    /** Passes e to onError and, for a configuration error, logs it. */
    void report(ErrorEvent e) {
        if (e.config()) opts.log().accept("rlserver: configuration error on " + e.command() + " \"" + e.key() + "\": " + e.error().getMessage());
        if (opts.onError() != null) opts.onError().accept(e);
    }

    /**
     * Sends PING under the client's timeout, so that a wrong or missing
     * password is found at start-up: call it once after construction. A
     * configuration error is logged and passed to onError; any error is thrown.
     */
    public void check() throws IOException {
        try {
            call("PING");
        } catch (RespException e) {
            if (misconfigured(e)) report(new ErrorEvent("PING", "", e, FailureMode.ERROR, true));
            throw e;
        }
    }

    /** Rethrows e unless the failure policy answers it; then calls onError. */
    void policy(String cmd, String key, Exception e) throws IOException {
        if (misconfigured(e)) report(new ErrorEvent(cmd, key, e, FailureMode.ERROR, true));
        if (!unreachable(e) || opts.failure() == FailureMode.ERROR) {
            if (e instanceof IOException io) throw io;
            throw (RuntimeException) e;
        }
        report(new ErrorEvent(cmd, key, e, opts.failure(), false));
    }

    Decision fail(String cmd, String key, Exception e, Limiter.Spec s, long n) throws IOException {
        policy(cmd, key, e);
        Duration r = opts.closedRetryAfter();
        return switch (opts.failure()) {
            case OPEN -> new Decision(true, s.limit(), s.limit(), Duration.ZERO, Duration.ZERO, true);
            case CLOSED -> new Decision(false, s.limit(), 0, r, r, true);
            default -> local.take(s, key, n, false);
        };
    }

    /** Checks and consumes cost units on every rule atomically (CL.ALL). In a cluster all keys must share a slot ({hash tag}). */
    public AllDecision all(long cost, Rule... rules) throws IOException {
        if (rules.length == 0) throw new IllegalArgumentException("rlserver: all needs at least one rule");
        List<Object> args = new ArrayList<>();
        args.add("CL.ALL");
        args.add(rules.length);
        for (Rule r : rules) {
            args.add(r.limiter().rule);
            args.add(r.key());
            args.addAll(r.limiter().params);
        }
        args.add("COST");
        args.add(cost);
        Object v;
        try {
            v = call(args.toArray());
        } catch (IOException | RespException e) {
            return allFallback(e, cost, rules);
        }
        if (!(v instanceof List<?> arr) || arr.size() != rules.length + 1) throw new RespException("BADREPLY unexpected reply " + v);
        List<Decision> ds = new ArrayList<>();
        List<Lease> ls = new ArrayList<>();
        for (int i = 0; i < rules.length; i++) {
            Decision d = Decision.parse(arr.get(i + 1));
            ds.add(d);
            Rule r = rules[i];
            ls.add(r.limiter() instanceof Concurrency && d.allowed()
                ? new Lease(this, r.limiter().spec, r.key(), cost, Decision.leaseId(arr.get(i + 1)), false) : null);
        }
        return new AllDecision(Long.valueOf(1).equals(arr.get(0)), ds, ls);
    }

    private AllDecision allFallback(Exception e, long cost, Rule[] rules) throws IOException {
        policy("CL.ALL", rules[0].key(), e);
        Decision[] ds = new Decision[rules.length];
        boolean allowed = true;
        Duration r = opts.closedRetryAfter();
        for (int i = 0; i < rules.length; i++) {
            Limiter.Spec s = rules[i].limiter().spec;
            ds[i] = switch (opts.failure()) {
                case OPEN -> new Decision(true, s.limit(), s.limit(), Duration.ZERO, Duration.ZERO, true);
                case CLOSED -> new Decision(false, s.limit(), 0, r, r, true);
                default -> local.take(s, rules[i].key(), cost, true);
            };
            allowed &= ds[i].allowed();
        }
        if (allowed && opts.failure() == FailureMode.LOCAL) {
            for (int i = 0; i < rules.length; i++) ds[i] = local.take(rules[i].limiter().spec, rules[i].key(), cost, false);
        }
        Lease[] ls = new Lease[rules.length];
        if (allowed) {
            for (int i = 0; i < rules.length; i++) {
                if (rules[i].limiter() instanceof Concurrency) ls[i] = new Lease(this, rules[i].limiter().spec, rules[i].key(), cost, "", false);
            }
        }
        return new AllDecision(allowed, List.of(ds), Arrays.asList(ls));
    }
}
