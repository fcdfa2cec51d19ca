package io.rlserver;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/** The in-process fallback (FailureMode.LOCAL): a token bucket per limiter and key, and locally held lease units. */
final class LocalStore {
    private static final int MAX_KEYS = 100_000;
    private final LongSupplier nanos;
    private final Map<String, double[]> buckets = new HashMap<>(); // {tokens, at nanos}
    private final Map<String, Long> held = new HashMap<>();

    LocalStore(LongSupplier nanos) { this.nanos = nanos; }

    synchronized Decision take(Limiter.Spec s, String key, long n, boolean peek) {
        long now = nanos.getAsLong();
        String id = s.id() + "\0" + key;
        double[] b = buckets.get(id);
        double windowNs = s.window().toNanos();
        if (b == null) {
            if (buckets.size() >= MAX_KEYS) buckets.values().removeIf(x -> now - (long) x[1] >= windowNs);
            b = new double[] {s.limit(), now};
            buckets.put(id, b);
        }
        double perUnit = windowNs / s.limit();
        double el = now - b[1];
        if (el > 0) b[0] = Math.min(s.limit(), b[0] + el / perUnit);
        b[1] = now;
        boolean allowed = false;
        Duration retry = Duration.ZERO;
        if (n > s.limit()) retry = Decision.NEVER;
        else if (b[0] >= n) {
            allowed = true;
            if (!peek) b[0] -= n;
        } else retry = Duration.ofNanos((long) ((n - b[0]) * perUnit));
        return new Decision(allowed, s.limit(), (long) b[0], retry, Duration.ofNanos((long) ((s.limit() - b[0]) * perUnit)), true);
    }

    synchronized boolean acquire(Limiter.Spec s, String key, long n) {
        String id = s.id() + "\0" + key;
        long h = held.getOrDefault(id, 0L);
        if (h + n > s.limit()) return false;
        held.put(id, h + n);
        return true;
    }

    synchronized void release(Limiter.Spec s, String key, long n) {
        String id = s.id() + "\0" + key;
        long h = held.getOrDefault(id, 0L) - n;
        if (h <= 0) held.remove(id); else held.put(id, h);
    }
}
