package io.rlserver;

import com.sun.net.httpserver.Filter;
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * A com.sun.net.httpserver Filter: decides each request's key, sets the
 * RateLimit and RateLimit-Policy fields (draft-ietf-httpapi-ratelimit-headers-11),
 * optionally X-RateLimit-*, and answers a denied request 429 with Retry-After.
 * A Concurrency limiter holds its lease while the request runs.
 */
public final class RateLimitFilter extends Filter {
    private final Limiter limiter;
    private String policy = "default";
    private Function<HttpExchange, String> key = RateLimitFilter::keyByIp;
    private ToLongFunction<HttpExchange> cost = x -> 1;
    private boolean xRateLimit;
    private String keyPrefix;

    public RateLimitFilter(Limiter limiter) { this.limiter = limiter; }

    /**
     * The policy name in the fields (default "default"): an RFC 8941 string,
     * so printable ASCII only; anything else is refused (IllegalArgumentException).
     */
    public RateLimitFilter policy(String p) {
        sfString(p);
        policy = p;
        return this;
    }

    /**
     * Put before every key (default "rl:<policy>:<kind>:", e.g.
     * "rl:default:tokenbucket:"), so that two limiters on one server never
     * share a key; "" sends keys as they are.
     */
    public RateLimitFilter keyPrefix(String p) { keyPrefix = p; return this; }

    /** The key prefix in use (see keyPrefix). */
    public String keyPrefix() { return keyPrefix != null ? keyPrefix : "rl:" + policy + ":" + limiter.kind() + ":"; }
    /** Derives the key (client IP, API key, user id); null or "" lets the request through unlimited. */
    public RateLimitFilter key(Function<HttpExchange, String> f) { key = f; return this; }
    /** The units a request takes (default 1). */
    public RateLimitFilter cost(ToLongFunction<HttpExchange> f) { cost = f; return this; }
    /** Also set X-RateLimit-Limit, -Remaining and -Reset. */
    public RateLimitFilter xRateLimit(boolean on) { xRateLimit = on; return this; }

    public static String keyByIp(HttpExchange x) { return x.getRemoteAddress().getAddress().getHostAddress(); }

    @Override public String description() { return "rlserver rate limit"; }

    @Override public void doFilter(HttpExchange x, Chain chain) throws IOException {
        String k = key.apply(x);
        if (k == null || k.isEmpty()) {
            chain.doFilter(x);
            return;
        }
        k = keyPrefix() + k;
        long n = cost.applyAsLong(x);
        Concurrency.Acquired a;
        try {
            a = take(limiter, k, n);
        } catch (IOException | RuntimeException e) {
            send(x, 503, "rate limiter unavailable");
            return;
        }
        Decision d = a.decision();
        try (Lease held = a.lease()) {
            setHeaders(x.getResponseHeaders(), policy, limiter.window(), d, xRateLimit);
            if (!d.allowed()) {
                send(x, 429, "rate limit exceeded");
                return;
            }
            chain.doFilter(x);
        }
    }

    private static void send(HttpExchange x, int status, String body) throws IOException {
        byte[] b = (body + "\n").getBytes(StandardCharsets.UTF_8);
        x.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
        x.sendResponseHeaders(status, b.length);
        x.getResponseBody().write(b);
        x.close();
    }

    /**
     * s as an RFC 8941 sf-string: "..." holding printable ASCII only (0x20 -
     * 0x7E), " and \\ escaped; IllegalArgumentException for anything else.
     */
    static String sfString(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c > 0x7e) {
                throw new IllegalArgumentException(String.format("rlserver: policy name \"%s\": an RFC 8941 string holds printable ASCII only (U+%04X at %d)", s, (int) c, i));
            }
            if (c == '"' || c == '\\') b.append('\\');
            b.append(c);
        }
        return b.append('"').toString();
    }

    static long ceilSeconds(Duration d) {
        if (d.isZero() || d.isNegative()) return 0;
        long ms = d.toMillis() + (d.toNanosPart() % 1_000_000 != 0 ? 1 : 0);
        return (ms + 999) / 1000;
    }

    /** Sets the fields for decision d under the named policy of the given window; seconds round up. */
    /** The decision for key, with the lease a concurrency limiter holds for the request (null otherwise): both filters' first step. */
    static Concurrency.Acquired take(Limiter limiter, String key, long n) throws IOException {
        if (limiter instanceof Concurrency cc) {
            return cc.acquire(key, n);
        }
        return new Concurrency.Acquired(null, limiter.decide(key, n));
    }

    public static void setHeaders(Headers h, String policy, Duration window, Decision d, boolean x) {
        setHeaders(h::set, policy, window, d, x);
    }

    /** The same fields, each given to set(name, value): for other servers (the Servlet filter's response.setHeader). */
    public static void setHeaders(BiConsumer<String, String> set, String policy, Duration window, Decision d, boolean x) {
        String name = sfString(policy);
        String reset = Long.toString(ceilSeconds(d.resetAfter()));
        set.accept("RateLimit-Policy", name + ";q=" + d.limit() + ";w=" + Math.max(1, ceilSeconds(window)));
        set.accept("RateLimit", name + ";r=" + d.remaining() + ";t=" + reset);
        if (!d.allowed() && !d.retryAfter().equals(Decision.NEVER)) set.accept("Retry-After", Long.toString(Math.max(1, ceilSeconds(d.retryAfter()))));
        if (x) {
            set.accept("X-RateLimit-Limit", Long.toString(d.limit()));
            set.accept("X-RateLimit-Remaining", Long.toString(d.remaining()));
            set.accept("X-RateLimit-Reset", reset);
        }
    }
}
