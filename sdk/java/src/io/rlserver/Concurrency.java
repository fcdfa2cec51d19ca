package io.rlserver;

import java.io.IOException;
import java.time.Duration;

/** At most limit units held at once by leases that expire unless renewed (CL.ACQUIRE/RELEASE/RENEW). */
public final class Concurrency extends Limiter {
    /** The outcome of acquire: the lease (null when denied) and the decision. */
    public record Acquired(Lease lease, Decision decision) { }

    /** Denied by the scoped form. */
    public static final class LimitedException extends IOException {
        public final Decision decision;
        public LimitedException(Decision d) { super("rlserver: rate limited"); decision = d; }
    }

    Concurrency(Client c, long limit, Duration lease) {
        super(c, "CL.ACQUIRE", "ACQUIRE", limit, lease, "" + limit, dur(lease));
    }

    /** Takes n units for key; the lease is null when denied. */
    public Acquired acquire(String key, long n) throws IOException {
        Object v;
        try {
            v = c.call("CL.ACQUIRE", key, params.get(0), params.get(1), n);
        } catch (IOException | RespException e) {
            c.policy("CL.ACQUIRE", key, e);
            FailureMode m = c.opts.failure();
            boolean local = m == FailureMode.LOCAL && c.local.acquire(spec, key, n);
            if (m != FailureMode.OPEN && !local) {
                Duration r = c.opts.closedRetryAfter();
                return new Acquired(null, new Decision(false, spec.limit(), 0, r, r, true));
            }
            return new Acquired(new Lease(c, spec, key, n, "", local), new Decision(true, spec.limit(), 0, Duration.ZERO, Duration.ZERO, true));
        }
        Decision d = Decision.parse(v);
        if (!d.allowed()) return new Acquired(null, d);
        return new Acquired(new Lease(c, spec, key, n, Decision.leaseId(v), false), d);
    }

    /** Acquires (or throws LimitedException): use in try-with-resources, which always releases. */
    public Lease hold(String key, long n) throws IOException {
        Acquired a = acquire(key, n);
        if (a.lease() == null) throw new LimitedException(a.decision());
        return a.lease();
    }

    /** Acquires and forgets the lease, which expires by itself. */
    @Override public Decision decide(String key, long n) throws IOException { return acquire(key, n).decision(); }

    /** A lease for an id another process acquired. */
    public Lease lease(String key, String id) { return new Lease(c, spec, key, 0, id, false); }
}
