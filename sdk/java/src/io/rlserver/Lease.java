package io.rlserver;

import java.io.IOException;
import java.time.Duration;

/**
 * Held units of a Concurrency limiter. close() releases, so try-with-resources
 * always gives the units back. A lease answered by the failure policy has an
 * empty id and is released locally.
 */
public final class Lease implements AutoCloseable {
    private final Client c;
    private final Limiter.Spec spec;
    private final String key;
    private final long n;
    private final String id;
    private final boolean local;
    private boolean closed;

    Lease(Client c, Limiter.Spec spec, String key, long n, String id, boolean local) {
        this.c = c;
        this.spec = spec;
        this.key = key;
        this.n = n;
        this.id = id;
        this.local = local;
    }

    public String id() { return id; }
    public String key() { return key; }

    /** Returns the units: true if the lease was held, false if unknown or expired. */
    public boolean release() throws IOException {
        if (id.isEmpty()) {
            if (local && !closed) c.local.release(spec, key, n);
            closed = true;
            return true;
        }
        closed = true;
        return Long.valueOf(1).equals(c.call("CL.RELEASE", key, id));
    }

    /** Extends the lease to expire d from now: false if it had expired. */
    public boolean renew(Duration d) throws IOException {
        if (id.isEmpty()) return true;
        return Long.valueOf(1).equals(c.call("CL.RENEW", key, id, Limiter.dur(d)));
    }

    /** Releases once; errors are swallowed (the lease then expires by itself). */
    @Override public void close() {
        if (closed) return;
        try { release(); } catch (IOException | RuntimeException ignored) { closed = true; }
    }

}
