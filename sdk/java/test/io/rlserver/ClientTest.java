package io.rlserver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The RESP client, pipelining, leases and the HTTP filter against a real server. */
class ClientTest {
    static Server srv;
    static Pool pool;
    static Client c;

    @BeforeAll static void start() throws Exception {
        srv = Server.start();
        pool = srv.pool();
        c = new Client(pool, Options.defaults());
    }

    @AfterAll static void stop() throws Exception {
        pool.close();
        srv.close();
    }

    @BeforeEach void reset() throws Exception {
        pool.call("FLUSHALL");
        pool.call("DEBUG", "CLOCK", "SET", 1_800_000_000_000L);
    }

    @Test void authenticatesEachConnection() throws Exception {
        try (Server s = Server.start("--requirepass", "s3cret")) {
            try (Pool none = new Pool(s.host, s.port)) {
                RespException e = assertThrows(RespException.class, () -> none.call("CL.WINDOW", "a", 5, "1m", 1, "FIXED"));
                assertEquals("NOAUTH", e.code());
            }
            try (Pool wrong = new Pool(s.host, s.port, 0, 4, null, "nope")) {
                RespException e = assertThrows(RespException.class, () -> wrong.call("PING"));
                assertEquals("WRONGPASS", e.code());
            }
            for (String user : new String[] {null, "default"}) {
                try (Pool p = new Pool(s.host, s.port, 0, 4, user, "s3cret")) {
                    // Several connections at once, each authenticated when made.
                    List<Object[]> reqs = new ArrayList<>();
                    for (int i = 0; i < 3; i++) reqs.add(new Object[] {"CL.WINDOW", "a:" + user, 5, "1m", 1, "FIXED"});
                    assertEquals(3, p.pipeline(reqs).size());
                    Client rl = new Client(p, Options.defaults());
                    assertEquals(1, rl.window(Limiter.WindowMode.FIXED, 5, Duration.ofMinutes(1)).allow("a:" + user).remaining());
                }
            }
        }
    }

    @Test void respRepliesAndPipelining() throws Exception {
        assertEquals("PONG", pool.call("PING"));
        assertEquals("héllo\r\nx", pool.call("ECHO", "héllo\r\nx"));
        assertEquals("none", pool.call("TYPE", "missing"));
        assertEquals(-2L, pool.call("PTTL", "missing"));
        List<Object[]> reqs = new ArrayList<>();
        for (int i = 0; i < 100; i++) reqs.add(new Object[] {"CL.WINDOW", "p", 50, "1m", 1, "FIXED"});
        reqs.add(new Object[] {"NOSUCHCOMMAND"});
        List<Object> replies = pool.pipeline(reqs);
        assertEquals(101, replies.size());
        assertEquals(List.of(1L, 50L, 49L, 0L, 60000L), replies.get(0));
        assertEquals(0L, ((List<?>) replies.get(99)).get(0));
        assertTrue(replies.get(100) instanceof RespException);
        // The connection is still usable after an error reply.
        assertEquals("PONG", pool.call("PING"));
    }

    @Test void reserveThrottleAndAll() throws Exception {
        var tb = c.tokenBucket(2, 1, Duration.ofSeconds(1));
        assertTrue(tb.allowN("r", 2).allowed());
        Decision d = tb.reserve("r", 1, Duration.ofSeconds(5));
        assertTrue(d.allowed());
        assertEquals(Duration.ofSeconds(1), d.retryAfter());
        var th = c.throttle(0, 2, Duration.ofSeconds(1));
        assertTrue(th.allow("g").allowed());
        Decision dt = th.allow("g");
        assertFalse(dt.allowed());
        assertEquals(Duration.ofMillis(500), dt.retryAfter());
        assertEquals(Duration.ofMillis(500), th.window());
        var cc = c.concurrency(1, Duration.ofMinutes(1));
        AllDecision ad = c.all(1, cc.rule("{u}:c"), c.window(Limiter.WindowMode.FIXED, 10, Duration.ofMinutes(1)).rule("{u}:w"));
        assertTrue(ad.allowed());
        assertNotNull(ad.leases().get(0));
        assertEquals(null, ad.leases().get(1));
        assertFalse(cc.acquire("{u}:c", 1).decision().allowed());
        assertTrue(ad.leases().get(0).release());
        assertTrue(cc.acquire("{u}:c", 1).decision().allowed());
    }

    @Test void leaseTryWithResourcesAlwaysReleases() throws Exception {
        Concurrency cc = c.concurrency(1, Duration.ofMinutes(1));
        assertThrows(IllegalStateException.class, () -> {
            try (Lease le = cc.hold("job", 1)) {
                assertFalse(le.id().isEmpty());
                assertThrows(Concurrency.LimitedException.class, () -> cc.hold("job", 1));
                assertTrue(le.renew(Duration.ofMinutes(2)));
                throw new IllegalStateException("work failed");
            }
        });
        try (Lease le = cc.hold("job", 1)) {
            assertEquals("job", le.key());
        }
        Lease le = cc.hold("job", 1);
        assertTrue(le.release());
        assertFalse(le.release());
    }

    @Test void httpFilter() throws Exception {
        HttpServer hs = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        var ctx = hs.createContext("/", x -> {
            byte[] b = "ok".getBytes();
            x.sendResponseHeaders(200, b.length);
            x.getResponseBody().write(b);
            x.close();
        });
        ctx.getFilters().add(new RateLimitFilter(c.tokenBucket(2, 1, Duration.ofSeconds(10)))
            .key(x -> x.getRequestHeaders().getFirst("X-Api-Key")).xRateLimit(true));
        hs.start();
        try {
            HttpClient http = HttpClient.newHttpClient();
            URI u = URI.create("http://127.0.0.1:" + hs.getAddress().getPort() + "/");
            HttpRequest req = HttpRequest.newBuilder(u).header("X-Api-Key", "alice").build();
            HttpResponse<String> r1 = http.send(req, HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r1.statusCode());
            assertEquals("\"default\";r=1;t=10", r1.headers().firstValue("RateLimit").orElse(""));
            assertEquals("\"default\";q=2;w=20", r1.headers().firstValue("RateLimit-Policy").orElse(""));
            assertEquals("1", r1.headers().firstValue("X-RateLimit-Remaining").orElse(""));
            assertFalse(r1.headers().firstValue("Retry-After").isPresent());
            assertEquals(200, http.send(req, HttpResponse.BodyHandlers.ofString()).statusCode());
            HttpResponse<String> r3 = http.send(req, HttpResponse.BodyHandlers.ofString());
            assertEquals(429, r3.statusCode());
            assertEquals("10", r3.headers().firstValue("Retry-After").orElse(""));
            assertEquals("\"default\";r=0;t=20", r3.headers().firstValue("RateLimit").orElse(""));
            // No key: through, unlimited, no fields.
            HttpResponse<String> r4 = http.send(HttpRequest.newBuilder(u).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r4.statusCode());
            assertFalse(r4.headers().firstValue("RateLimit").isPresent());
        } finally {
            hs.stop(0);
        }
    }

    @Test void httpFilterHoldsConcurrencyLeaseForTheRequest() throws Exception {
        HttpServer hs = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        hs.setExecutor(java.util.concurrent.Executors.newFixedThreadPool(4));
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        var ctx = hs.createContext("/", x -> {
            inside.countDown();
            try {
                finish.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            x.sendResponseHeaders(204, -1);
            x.close();
        });
        ctx.getFilters().add(new RateLimitFilter(c.concurrency(1, Duration.ofMinutes(1))).key(x -> "one"));
        hs.start();
        try {
            HttpClient http = HttpClient.newHttpClient();
            URI u = URI.create("http://127.0.0.1:" + hs.getAddress().getPort() + "/");
            var first = http.sendAsync(HttpRequest.newBuilder(u).build(), HttpResponse.BodyHandlers.discarding());
            inside.await();
            assertEquals(429, http.send(HttpRequest.newBuilder(u).build(), HttpResponse.BodyHandlers.discarding()).statusCode());
            finish.countDown();
            assertEquals(204, first.get().statusCode());
            // Released once the first request's filter returns (just after its
            // response is sent): poll with a deadline.
            long deadline = System.nanoTime() + 10_000_000_000L;
            int status;
            do {
                status = http.send(HttpRequest.newBuilder(u).build(), HttpResponse.BodyHandlers.discarding()).statusCode();
            } while (status == 429 && System.nanoTime() < deadline);
            assertEquals(204, status);
        } finally {
            hs.stop(0);
            ((java.util.concurrent.ExecutorService) hs.getExecutor()).shutdownNow();
        }
    }
}
