package io.rlserver;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.servlet.Filter;
import javax.servlet.FilterRegistration;
import javax.servlet.ServletContext;
import javax.servlet.ServletOutputStream;
import javax.servlet.WriteListener;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * RateLimitServletFilter against a real server, on minimal fakes of the
 * Servlet API (java.lang.reflect.Proxy: only what the filter calls), and
 * the README's Servlet block (example/ServletExample.java) run on them.
 */
class ServletFilterTest {
    Server srv;
    Pool pool;

    @BeforeEach void start() throws Exception {
        srv = Server.start();
        pool = srv.pool();
        pool.call("DEBUG", "CLOCK", "SET", 1_800_000_000_000L);
    }

    @AfterEach void stop() throws Exception {
        pool.close();
        srv.close();
    }

    static HttpServletRequest request(String remoteAddr, Map<String, String> headers) {
        return (HttpServletRequest) Proxy.newProxyInstance(ServletFilterTest.class.getClassLoader(), new Class<?>[] {HttpServletRequest.class},
            (p, m, a) -> switch (m.getName()) {
                case "getRemoteAddr" -> remoteAddr;
                case "getHeader" -> headers.get((String) a[0]);
                default -> throw new UnsupportedOperationException(m.getName());
            });
    }

    /** A response recording its status, fields (by lower-case name) and body. */
    static final class Response {
        int status = 200;
        final Map<String, String> fields = new TreeMap<>();
        final ByteArrayOutputStream body = new ByteArrayOutputStream();
        final HttpServletResponse proxy = (HttpServletResponse) Proxy.newProxyInstance(ServletFilterTest.class.getClassLoader(),
            new Class<?>[] {HttpServletResponse.class}, (p, m, a) -> call(m, a));

        private Object call(Method m, Object[] a) {
            switch (m.getName()) {
                case "setStatus" -> status = (int) a[0];
                case "setHeader" -> fields.put(((String) a[0]).toLowerCase(), (String) a[1]);
                case "setContentType" -> fields.put("content-type", (String) a[0]);
                case "setContentLength" -> fields.put("content-length", Integer.toString((int) a[0]));
                case "getOutputStream" -> {
                    return new ServletOutputStream() {
                        @Override public void write(int b) { body.write(b); }
                        @Override public boolean isReady() { return true; }
                        @Override public void setWriteListener(WriteListener l) { }
                    };
                }
                default -> throw new UnsupportedOperationException(m.getName());
            }
            return null;
        }

        String line() { return status + " " + fields + " " + body; }
    }

    /** Runs f on one request; the chain records that it ran (and what it saw) into calls. */
    static Response serve(Filter f, HttpServletRequest req, List<String> calls) throws Exception {
        Response res = new Response();
        f.doFilter(req, res.proxy, (rq, rs) -> calls.add("chain"));
        return res;
    }

    @Test void limitsAndSetsTheFields() throws Exception {
        Client c = new Client(pool, Options.defaults());
        Filter f = new RateLimitServletFilter(c.tokenBucket(2, 1, Duration.ofSeconds(1))).xRateLimit(true);
        List<String> calls = new ArrayList<>();
        HttpServletRequest req = request("192.0.2.1", Map.of());
        assertEquals("200 {ratelimit=\"default\";r=1;t=1, ratelimit-policy=\"default\";q=2;w=2, x-ratelimit-limit=2, x-ratelimit-remaining=1, x-ratelimit-reset=1} ",
            serve(f, req, calls).line());
        assertEquals("200 {ratelimit=\"default\";r=0;t=2, ratelimit-policy=\"default\";q=2;w=2, x-ratelimit-limit=2, x-ratelimit-remaining=0, x-ratelimit-reset=2} ",
            serve(f, req, calls).line());
        assertEquals("429 {content-length=20, content-type=text/plain; charset=utf-8, ratelimit=\"default\";r=0;t=2, ratelimit-policy=\"default\";q=2;w=2, "
            + "retry-after=1, x-ratelimit-limit=2, x-ratelimit-remaining=0, x-ratelimit-reset=2} rate limit exceeded\n", serve(f, req, calls).line());
        assertEquals(List.of("chain", "chain"), calls);
        assertEquals(1L, pool.call("EXISTS", "rl:default:tokenbucket:192.0.2.1"));
        // Another address has its own key; a null key is not limited (no fields).
        assertEquals(200, serve(f, request("192.0.2.2", Map.of()), calls).status);
        Response open = serve(new RateLimitServletFilter(c.tokenBucket(2, 1, Duration.ofSeconds(1))).key(r -> null), req, calls);
        assertEquals("200 {} ", open.line());
        assertEquals(4, calls.size());
    }

    /** A Concurrency limiter's lease is held while the chain runs, released after. */
    @Test void concurrencyLeaseHeldForTheChain() throws Exception {
        Client c = new Client(pool, Options.defaults());
        Concurrency cc = c.concurrency(1, Duration.ofMinutes(1));
        Filter f = new RateLimitServletFilter(cc).policy("jobs");
        HttpServletRequest req = request("192.0.2.1", Map.of());
        List<String> inner = new ArrayList<>();
        Response res = new Response();
        f.doFilter(req, res.proxy, (rq, rs) -> {
            Response nested = new Response();
            try {
                f.doFilter(req, nested.proxy, (a, b) -> inner.add("nested chain"));
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
            inner.add(nested.status + " " + nested.fields.get("ratelimit"));
        });
        assertEquals(200, res.status);
        assertEquals(List.of("429 \"jobs\";r=0;t=60"), inner);
        assertEquals("\"jobs\";r=0;t=60", res.fields.get("ratelimit"));
        assertEquals(0L, pool.call("EXISTS", "rl:jobs:concurrency:192.0.2.1")); // released
        assertEquals(200, serve(f, req, inner).status);
    }

    /** A server down before the first request meets the policy (OPEN: through); a configuration error is a 503. */
    @Test void failurePolicyAndConfigurationErrors() throws Exception {
        int port;
        try (Server down = Server.start()) {
            port = down.port;
        }
        Client open = new Client(new Pool("127.0.0.1", port), Options.defaults().withTimeout(Duration.ofMillis(200)).withFailure(FailureMode.OPEN));
        List<String> calls = new ArrayList<>();
        Response r = serve(new RateLimitServletFilter(open.tokenBucket(2, 1, Duration.ofSeconds(1))), request("192.0.2.1", Map.of()), calls);
        assertEquals("200 {ratelimit=\"default\";r=2;t=0, ratelimit-policy=\"default\";q=2;w=2} ", r.line());
        pool.call("CL.WINDOW", "rl:default:tokenbucket:192.0.2.9", 10, "1m"); // another kind on the key: WRONGTYPE
        Client c = new Client(pool, Options.defaults().withFailure(FailureMode.OPEN).withLog(m -> { }));
        r = serve(new RateLimitServletFilter(c.tokenBucket(2, 1, Duration.ofSeconds(1))), request("192.0.2.9", Map.of()), calls);
        assertEquals("503 {content-length=25, content-type=text/plain; charset=utf-8} rate limiter unavailable\n", r.line());
        assertEquals(List.of("chain"), calls);
    }

    /** The README's block (ServletExample.register) on a fake ServletContext: the filter it adds, mapped to /api/*, limits by API key. */
    @Test void readmeServletBlockRuns() throws Exception {
        Map<String, Filter> filters = new TreeMap<>();
        List<String> mappings = new ArrayList<>();
        FilterRegistration.Dynamic reg = (FilterRegistration.Dynamic) Proxy.newProxyInstance(getClass().getClassLoader(),
            new Class<?>[] {FilterRegistration.Dynamic.class}, (p, m, a) -> {
                if (!m.getName().equals("addMappingForUrlPatterns")) throw new UnsupportedOperationException(m.getName());
                mappings.add(a[0] + " " + a[1] + " " + List.of((String[]) a[2]));
                return null;
            });
        ServletContext ctx = (ServletContext) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {ServletContext.class}, (p, m, a) -> {
            if (!m.getName().equals("addFilter") || !(a[1] instanceof Filter)) throw new UnsupportedOperationException(m.getName());
            filters.put((String) a[0], (Filter) a[1]);
            return reg;
        });
        Method register = Class.forName("ServletExample").getDeclaredMethod("register", ServletContext.class, String.class, int.class);
        register.setAccessible(true);
        register.invoke(null, ctx, srv.host, srv.port);
        assertEquals(List.of("rlserver"), List.copyOf(filters.keySet()));
        assertEquals(List.of("null false [/api/*]"), mappings);
        List<String> calls = new ArrayList<>();
        Response r = serve(filters.get("rlserver"), request("192.0.2.1", Map.of("X-Api-Key", "k1")), calls);
        assertEquals("200 {ratelimit=\"default\";r=19;t=1, ratelimit-policy=\"default\";q=20;w=2, x-ratelimit-limit=20, x-ratelimit-remaining=19, x-ratelimit-reset=1} ", r.line());
        assertEquals(1L, pool.call("EXISTS", "rl:default:tokenbucket:key:k1"));
        serve(filters.get("rlserver"), request("192.0.2.1", Map.of()), calls);
        assertEquals(1L, pool.call("EXISTS", "rl:default:tokenbucket:ip:192.0.2.1"));
        assertEquals(List.of("chain", "chain"), calls);
    }
}
