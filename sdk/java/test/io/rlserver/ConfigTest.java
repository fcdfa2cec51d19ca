package io.rlserver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Faults a newcomer meets: a server down or unreachable before the first
 * request, limiters sharing the default key, a wrong password, policy names
 * that are not RFC 8941 strings, and the README's example drifting.
 */
class ConfigTest {
    /**
     * A 127.0.0.1 listener that never accepts, its accept backlog filled, so
     * that connecting to it hangs (Linux drops the SYN of a full queue).
     */
    static final class FullBacklog implements AutoCloseable {
        final ServerSocket ln;
        final List<Socket> held = new ArrayList<>();

        FullBacklog() throws IOException {
            ln = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
            long deadline = System.nanoTime() + 10_000_000_000L;
            for (;;) {
                Socket s = new Socket();
                try {
                    s.connect(new InetSocketAddress("127.0.0.1", ln.getLocalPort()), 200);
                    held.add(s);
                } catch (SocketTimeoutException full) {
                    s.close();
                    return;
                }
                if (System.nanoTime() > deadline) throw new IllegalStateException("the backlog never filled");
            }
        }

        int port() { return ln.getLocalPort(); }

        @Override public void close() throws IOException {
            for (Socket s : held) s.close();
            ln.close();
        }
    }

    @Test void timeoutBoundsConnectingToAFullBacklog() throws Exception {
        try (FullBacklog fb = new FullBacklog()) {
            for (boolean cluster : new boolean[] {false, true}) {
                List<ErrorEvent> events = Collections.synchronizedList(new ArrayList<>());
                assertTimeoutPreemptively(Duration.ofSeconds(5), () -> {
                    Redis r = cluster ? new Cluster("127.0.0.1:" + fb.port()) : new Pool("127.0.0.1", fb.port());
                    try (r) {
                        Client c = new Client(r, Options.defaults().withTimeout(Duration.ofMillis(100)).withFailure(FailureMode.OPEN).withOnError(events::add));
                        long t0 = System.nanoTime();
                        Decision d = c.tokenBucket(5, 1, Duration.ofSeconds(1)).allow("k");
                        long ms = (System.nanoTime() - t0) / 1_000_000;
                        assertEquals(new Decision(true, 5, 5, Duration.ZERO, Duration.ZERO, true), d);
                        assertTrue(ms < 1000, "cluster=" + cluster + ": took " + ms + " ms with a 100 ms timeout");
                    }
                }, "cluster=" + cluster);
                assertEquals(1, events.size(), "cluster=" + cluster);
                assertTrue(events.get(0).error() instanceof SocketTimeoutException, events.get(0).error().toString());
                assertFalse(events.get(0).config());
            }
        }
    }

    @Test void serverDownBeforeTheFirstRequest() throws Exception {
        int port;
        try (Server s = Server.start()) {
            port = s.port;
        }
        for (boolean cluster : new boolean[] {false, true}) {
            List<ErrorEvent> events = new ArrayList<>();
            // The Cluster constructor connects to nothing: no exception at start-up.
            Redis r = cluster ? new Cluster("127.0.0.1:" + port) : new Pool("127.0.0.1", port);
            try (r) {
                Client c = new Client(r, Options.defaults().withTimeout(Duration.ofMillis(100)).withFailure(FailureMode.CLOSED).withOnError(events::add));
                Decision d = c.window(Limiter.WindowMode.FIXED, 3, Duration.ofMinutes(1)).allow("k");
                assertEquals(new Decision(false, 3, 0, Duration.ofSeconds(1), Duration.ofSeconds(1), true), d);
                assertEquals(1, events.size());
                assertTrue(events.get(0).error() instanceof java.net.ConnectException, events.get(0).error().toString());
            }
        }
    }

    static HttpServer http(RateLimitFilter... filters) throws IOException {
        HttpServer hs = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        for (int i = 0; i < filters.length; i++) {
            hs.createContext("/" + i, x -> {
                x.sendResponseHeaders(204, -1);
                x.close();
            }).getFilters().add(filters[i]);
        }
        hs.start();
        return hs;
    }

    static HttpResponse<Void> get(HttpServer hs, String path) throws Exception {
        URI u = URI.create("http://127.0.0.1:" + hs.getAddress().getPort() + path);
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(u).build(), HttpResponse.BodyHandlers.discarding());
    }

    @Test void twoLimitersOnTheDefaultKeyDoNotCollide() throws Exception {
        try (Server s = Server.start(); Pool p = s.pool()) {
            p.call("DEBUG", "CLOCK", "SET", 1_800_000_000_000L);
            List<ErrorEvent> events = new ArrayList<>();
            Client c = new Client(p, Options.defaults().withFailure(FailureMode.OPEN).withOnError(events::add));
            HttpServer hs = http(new RateLimitFilter(c.tokenBucket(2, 1, Duration.ofSeconds(1))),
                new RateLimitFilter(c.window(Limiter.WindowMode.SLIDING, 3, Duration.ofMinutes(1))));
            try {
                List<String> got = new ArrayList<>();
                for (String path : new String[] {"/0", "/1", "/0", "/1", "/0", "/1", "/1"}) {
                    HttpResponse<Void> r = get(hs, path);
                    got.add(r.statusCode() + " " + r.headers().firstValue("RateLimit").orElse(""));
                }
                assertEquals(List.of(
                    "204 \"default\";r=1;t=1", "204 \"default\";r=2;t=120",
                    "204 \"default\";r=0;t=2", "204 \"default\";r=1;t=120",
                    "429 \"default\";r=0;t=2", "204 \"default\";r=0;t=120",
                    "429 \"default\";r=0;t=120"), got);
                assertEquals(1L, p.call("EXISTS", "rl:default:tokenbucket:127.0.0.1"));
                assertEquals(1L, p.call("EXISTS", "rl:default:sliding:127.0.0.1"));
                assertTrue(events.isEmpty(), events.toString());
            } finally {
                hs.stop(0);
            }
            assertEquals("rl:api:fixed:", new RateLimitFilter(c.window(Limiter.WindowMode.FIXED, 1, Duration.ofMinutes(1))).policy("api").keyPrefix());
            assertEquals("", new RateLimitFilter(c.concurrency(1, Duration.ofMinutes(1))).keyPrefix("").keyPrefix());
        }
    }

    @Test void wrongTypeIsReportedLoudly() throws Exception {
        try (Server s = Server.start(); Pool p = s.pool()) {
            List<ErrorEvent> events = new ArrayList<>();
            List<String> logged = new ArrayList<>();
            Client c = new Client(p, Options.defaults().withFailure(FailureMode.OPEN).withOnError(events::add).withLog(logged::add));
            assertTrue(c.tokenBucket(5, 1, Duration.ofSeconds(1)).allow("k").allowed());
            RespException e = assertThrows(RespException.class, () -> c.window(Limiter.WindowMode.FIXED, 3, Duration.ofMinutes(1)).allow("k"));
            assertEquals("WRONGTYPE", e.code());
            assertEquals(List.of(new ErrorEvent("CL.WINDOW", "k", e, FailureMode.ERROR, true)), events);
            assertEquals(1, logged.size());
            assertTrue(logged.get(0).startsWith("rlserver: configuration error on CL.WINDOW \"k\": WRONGTYPE"), logged.get(0));
        }
    }

    @Test void wrongOrMissingPasswordIsReported() throws Exception {
        try (Server s = Server.start("--requirepass", "s3cret")) {
            for (String[] tc : new String[][] {{"wrong", "WRONGPASS"}, {null, "NOAUTH"}}) {
                List<ErrorEvent> events = new ArrayList<>();
                List<String> logged = new ArrayList<>();
                try (Pool p = new Pool(s.host, s.port, 0, 4, null, tc[0])) {
                    Client c = new Client(p, Options.defaults().withTimeout(Duration.ofSeconds(1)).withFailure(FailureMode.OPEN)
                        .withOnError(events::add).withLog(logged::add));
                    RespException e = assertThrows(RespException.class, c::check);
                    assertEquals(tc[1], e.code());
                    HttpServer hs = http(new RateLimitFilter(c.tokenBucket(2, 1, Duration.ofSeconds(1))));
                    try {
                        assertEquals(503, get(hs, "/0").statusCode());
                    } finally {
                        hs.stop(0);
                    }
                }
                assertEquals(2, events.size(), events.toString());
                assertEquals("PING", events.get(0).command());
                assertEquals("CL.TOKENBUCKET", events.get(1).command());
                for (ErrorEvent ev : events) {
                    assertTrue(ev.config());
                    assertEquals(FailureMode.ERROR, ev.mode());
                    assertEquals(tc[1], ((RespException) ev.error()).code());
                }
                assertEquals(2, logged.size());
                assertTrue(logged.get(1).contains(tc[1]), logged.get(1));
            }
            try (Pool p = new Pool(s.host, s.port, 0, 4, null, "s3cret")) {
                new Client(p, Options.defaults()).check();
            }
        }
    }

    @Test void policyNamesAreSfStrings() {
        assertEquals("\"a \\\"q\\\" \\\\ b\"", RateLimitFilter.sfString("a \"q\" \\ b"));
        for (String bad : new String[] {"tab\there", "é", "nl\n", "del\u007f"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new RateLimitFilter(null).policy(bad));
            assertTrue(e.getMessage().contains("RFC 8941"), e.getMessage());
        }
    }

    /** The README's endpoint example is example/Example.java's code, which build.sh compiles. */
    @Test void readmeExampleIsCompiled() throws Exception {
        String readme = Files.readString(Path.of("README.md"));
        String example = Files.readString(Path.of("example/Example.java"));
        int h = readme.indexOf("## Protect an HTTP endpoint");
        int from = readme.indexOf("```java\n", h) + "```java\n".length();
        String block = readme.substring(from, readme.indexOf("```", from));
        StringBuilder indented = new StringBuilder();
        for (String line : block.split("\n")) indented.append(line.isEmpty() ? "" : "        " + line).append('\n');
        assertTrue(h >= 0 && example.contains(indented), "README.md's example is not in example/Example.java:\n" + block);
    }
}
