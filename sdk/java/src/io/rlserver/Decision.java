package io.rlserver;

import java.time.Duration;
import java.util.List;

/**
 * The server's five-integer decision, typed. retryAfter is {@link #NEVER}
 * when the request can never be admitted; fallback is true when the failure
 * policy decided because the server could not be reached.
 */
public record Decision(boolean allowed, long limit, long remaining, Duration retryAfter, Duration resetAfter, boolean fallback) {
    /** The server's -1 retry after: the cost exceeds the limit. */
    public static final Duration NEVER = Duration.ofMillis(-1);

    static Duration ms(long ms) { return ms < 0 ? NEVER : Duration.ofMillis(ms); }

    static Decision parse(Object v) {
        if (!(v instanceof List<?> l) || l.size() < 5) throw new RespException("BADREPLY unexpected reply " + v);
        long[] f = new long[5];
        for (int i = 0; i < 5; i++) {
            if (!(l.get(i) instanceof Long n)) throw new RespException("BADREPLY unexpected reply " + v);
            f[i] = n;
        }
        return new Decision(f[0] == 1, f[1], f[2], ms(f[3]), ms(f[4]), false);
    }

    static String leaseId(Object v) {
        if (v instanceof List<?> l && l.size() > 5 && l.get(5) instanceof String s) return s;
        return "";
    }
}
