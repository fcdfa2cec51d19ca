package io.rlserver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.Headers;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * The shared conformance cases (sdk/conformance/cases.json) through the typed
 * API against a real server, as sdk/go's conformance_test.go runs them.
 */
class ConformanceTest {
    static final String[] HEADERS = {"RateLimit", "RateLimit-Policy", "Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"};
    static Server srv;
    static Pool pool;

    @BeforeAll static void start() throws Exception {
        srv = Server.start();
        pool = srv.pool();
    }

    @AfterAll static void stop() throws Exception {
        pool.close();
        srv.close();
    }

    static Duration dur(String s) {
        String[][] units = {{"ms", "1"}, {"s", "1000"}, {"m", "60000"}, {"h", "3600000"}, {"d", "86400000"}};
        for (String[] u : units) {
            if (s.endsWith(u[0])) {
                try {
                    return Duration.ofMillis(Long.parseLong(s.substring(0, s.length() - u[0].length())) * Long.parseLong(u[1]));
                } catch (NumberFormatException ignored) {
                }
            }
        }
        return Duration.ofSeconds(Long.parseLong(s));
    }

    static long num(String s) { return Long.parseLong(s); }

    static List<Object> ints(Decision d) {
        return List.of(d.allowed() ? 1L : 0L, d.limit(), d.remaining(),
            d.retryAfter().equals(Decision.NEVER) ? -1L : d.retryAfter().toMillis(), d.resetAfter().toMillis());
    }

    /** A CL.ALL rule's typed limiter and how many words it took. */
    static Object[] ruleOf(Client c, List<String> w) {
        return switch (w.get(0).toUpperCase()) {
            case "TOKENBUCKET" -> new Object[] {c.tokenBucket(num(w.get(2)), num(w.get(3)), dur(w.get(4))).rule(w.get(1)), 5};
            case "THROTTLE" -> new Object[] {c.throttle(num(w.get(2)), num(w.get(3)), dur(w.get(4))).rule(w.get(1)), 5};
            case "LEAKYBUCKET" -> new Object[] {c.leakyBucket(num(w.get(2)), num(w.get(3)), dur(w.get(4))).rule(w.get(1)), 5};
            case "FIXED", "SLIDING", "LOG" -> new Object[] {
                c.window(Limiter.WindowMode.valueOf(w.get(0).toUpperCase()), num(w.get(2)), dur(w.get(3))).rule(w.get(1)), 4};
            case "ACQUIRE" -> new Object[] {c.concurrency(num(w.get(2)), dur(w.get(3))).rule(w.get(1)), 4};
            default -> throw new IllegalArgumentException("unknown rule " + w.get(0));
        };
    }

    /** Runs one command through the SDK; returns the outcome in the file's form. */
    static Map<String, Object> runStep(Client c, String policy, List<String> cmd, String[] lease) throws IOException {
        Map<String, Object> got = new LinkedHashMap<>();
        Decision d = null;
        Limiter lim = null;
        String name = cmd.get(0).toUpperCase();
        try {
            switch (name) {
                case "CL.TOKENBUCKET" -> {
                    var tb = c.tokenBucket(num(cmd.get(2)), num(cmd.get(3)), dur(cmd.get(4)));
                    lim = tb;
                    if (cmd.size() > 7 && cmd.get(6).equalsIgnoreCase("RESERVE")) d = tb.reserve(cmd.get(1), num(cmd.get(5)), dur(cmd.get(7)));
                    else d = tb.allowN(cmd.get(1), cmd.size() > 5 ? num(cmd.get(5)) : 1);
                }
                case "CL.LEAKYBUCKET" -> {
                    var lb = c.leakyBucket(num(cmd.get(2)), num(cmd.get(3)), dur(cmd.get(4)));
                    lim = lb;
                    d = lb.allowN(cmd.get(1), cmd.size() > 5 ? num(cmd.get(5)) : 1);
                }
                case "CL.WINDOW" -> {
                    var mode = cmd.size() > 5 ? Limiter.WindowMode.valueOf(cmd.get(5).toUpperCase()) : Limiter.WindowMode.SLIDING;
                    var wl = c.window(mode, num(cmd.get(2)), dur(cmd.get(3)));
                    lim = wl;
                    d = wl.allowN(cmd.get(1), cmd.size() > 4 ? num(cmd.get(4)) : 1);
                }
                case "CL.ACQUIRE" -> {
                    var cc = c.concurrency(num(cmd.get(2)), dur(cmd.get(3)));
                    lim = cc;
                    var a = cc.acquire(cmd.get(1), cmd.size() > 4 ? num(cmd.get(4)) : 1);
                    d = a.decision();
                    got.put("lease", a.lease() != null);
                    if (a.lease() != null) lease[0] = a.lease().id();
                }
                case "CL.ALL" -> {
                    int nr = (int) num(cmd.get(1));
                    List<Rule> rules = new ArrayList<>();
                    List<String> w = cmd.subList(2, cmd.size());
                    for (int i = 0; i < nr; i++) {
                        Object[] r = ruleOf(c, w);
                        rules.add((Rule) r[0]);
                        w = w.subList((int) r[1], w.size());
                    }
                    long cost = w.size() == 2 && w.get(0).equalsIgnoreCase("COST") ? num(w.get(1)) : 1;
                    AllDecision ad = c.all(cost, rules.toArray(new Rule[0]));
                    List<Object> ds = new ArrayList<>();
                    for (int i = 0; i < ad.decisions().size(); i++) {
                        ds.add(ints(ad.decisions().get(i)));
                        if (ad.leases().get(i) != null) lease[0] = ad.leases().get(i).id();
                    }
                    got.put("all", Map.of("allowed", ad.allowed() ? 1L : 0L, "decisions", ds));
                    return got;
                }
                case "CL.RELEASE", "CL.RENEW" -> {
                    Lease le = c.concurrency(1, Duration.ofSeconds(1)).lease(cmd.get(1), lease[0]);
                    boolean ok = name.equals("CL.RELEASE") ? le.release() : le.renew(dur(cmd.get(3)));
                    got.put("reply", ok ? 1L : 0L);
                }
                default -> got.put("reply", c.redis().call(cmd.toArray()));
            }
        } catch (RespException e) {
            got.clear();
            got.put("error", e.code());
            return got;
        }
        if (lim != null) {
            got.put("decision", ints(d));
            Headers h = new Headers();
            RateLimitFilter.setHeaders(h, policy, lim.window(), d, true);
            Map<String, Object> hs = new LinkedHashMap<>();
            for (String n : HEADERS) if (h.getFirst(n) != null) hs.put(n, h.getFirst(n));
            got.put("headers", hs);
        }
        return got;
    }

    @SuppressWarnings("unchecked")
    @TestFactory List<DynamicTest> conformance() throws IOException {
        Map<String, Object> f = (Map<String, Object>) Json.parse(Files.readString(Path.of("../conformance/cases.json")));
        assertEquals(1L, f.get("format"));
        long start = (Long) f.get("start_unix_ms");
        String policy = (String) f.get("policy");
        List<Object> cases = (List<Object>) f.get("cases");
        assertTrue(!cases.isEmpty());
        Client c = new Client(pool, Options.defaults());
        List<DynamicTest> tests = new ArrayList<>();
        for (Object co : cases) {
            Map<String, Object> cs = (Map<String, Object>) co;
            tests.add(DynamicTest.dynamicTest((String) cs.get("name"), () -> {
                pool.call("FLUSHALL");
                pool.call("DEBUG", "CLOCK", "SET", start);
                String[] lease = {""};
                List<Object> steps = (List<Object>) cs.get("steps");
                for (int si = 0; si < steps.size(); si++) {
                    Map<String, Object> st = (Map<String, Object>) steps.get(si);
                    if (st.containsKey("advance_ms")) {
                        pool.call("DEBUG", "CLOCK", "ADVANCE", st.get("advance_ms"));
                        continue;
                    }
                    List<String> cmd = new ArrayList<>();
                    for (Object a : (List<Object>) st.get("command")) cmd.add(((String) a).replace("$lease", lease[0]));
                    Map<String, Object> got = runStep(c, policy, cmd, lease);
                    got.put("command", st.get("command"));
                    assertEquals(Json.render(st), Json.render(got), "step " + si);
                }
            }));
        }
        return tests;
    }
}
