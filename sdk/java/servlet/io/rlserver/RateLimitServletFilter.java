package io.rlserver;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import javax.servlet.Filter;
import javax.servlet.FilterChain;
import javax.servlet.ServletException;
import javax.servlet.ServletRequest;
import javax.servlet.ServletResponse;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

/**
 * A javax.servlet Filter (Servlet 4.0: Tomcat 9, Jetty 9-10, Spring Boot 2),
 * the same as RateLimitFilter for the JDK's HttpServer: decides each
 * request's key, sets the RateLimit and RateLimit-Policy fields
 * (draft-ietf-httpapi-ratelimit-headers-11), optionally X-RateLimit-*, and
 * answers a denied request 429 with Retry-After, a failed limiter 503. A
 * Concurrency limiter holds its lease while doFilter runs the rest of the
 * chain (an async request's lease is released when the chain returns, not
 * when the response completes). Built apart from the SDK (servlet/, against
 * Debian's libservlet-api-java), so the SDK itself needs nothing but the JDK.
 */
public final class RateLimitServletFilter implements Filter {
    private final Limiter limiter;
    private String policy = "default";
    private Function<HttpServletRequest, String> key = HttpServletRequest::getRemoteAddr;
    private ToLongFunction<HttpServletRequest> cost = r -> 1;
    private boolean xRateLimit;
    private String keyPrefix;

    public RateLimitServletFilter(Limiter limiter) { this.limiter = limiter; }

    /** The policy name in the fields (default "default"): an RFC 8941 string, printable ASCII only (else IllegalArgumentException). */
    public RateLimitServletFilter policy(String p) {
        RateLimitFilter.sfString(p);
        policy = p;
        return this;
    }

    /** Put before every key (default "rl:<policy>:<kind>:"); "" sends keys as they are. */
    public RateLimitServletFilter keyPrefix(String p) { keyPrefix = p; return this; }

    /** The key prefix in use (see keyPrefix). */
    public String keyPrefix() { return keyPrefix != null ? keyPrefix : "rl:" + policy + ":" + limiter.kind() + ":"; }

    /** Derives the key (default the client address, getRemoteAddr); null or "" lets the request through unlimited. */
    public RateLimitServletFilter key(Function<HttpServletRequest, String> f) { key = f; return this; }

    /** The units a request takes (default 1). */
    public RateLimitServletFilter cost(ToLongFunction<HttpServletRequest> f) { cost = f; return this; }

    /** Also set X-RateLimit-Limit, -Remaining and -Reset. */
    public RateLimitServletFilter xRateLimit(boolean on) { xRateLimit = on; return this; }

    @Override public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain) throws IOException, ServletException {
        if (!(request instanceof HttpServletRequest req) || !(response instanceof HttpServletResponse res)) {
            chain.doFilter(request, response);
            return;
        }
        String k = key.apply(req);
        if (k == null || k.isEmpty()) {
            chain.doFilter(request, response);
            return;
        }
        k = keyPrefix() + k;
        long n = cost.applyAsLong(req);
        Concurrency.Acquired a;
        try {
            a = RateLimitFilter.take(limiter, k, n);
        } catch (IOException | RuntimeException e) {
            send(res, 503, "rate limiter unavailable");
            return;
        }
        Decision d = a.decision();
        try (Lease held = a.lease()) {
            RateLimitFilter.setHeaders(res::setHeader, policy, limiter.window(), d, xRateLimit);
            if (!d.allowed()) {
                send(res, 429, "rate limit exceeded");
                return;
            }
            chain.doFilter(request, response);
        }
    }

    private static void send(HttpServletResponse res, int status, String body) throws IOException {
        byte[] b = (body + "\n").getBytes(StandardCharsets.UTF_8);
        res.setStatus(status);
        res.setContentType("text/plain; charset=utf-8");
        res.setContentLength(b.length);
        res.getOutputStream().write(b);
    }
}
