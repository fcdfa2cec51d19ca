package io.rlserver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The failure policy against a stopped server, a silent server, and server errors. */
class PolicyTest {
    /** A pool whose server answered once and is now gone. */
    static Pool stoppedServer() throws Exception {
        Pool p;
        try (Server s = Server.start()) {
            p = s.pool();
            assertEquals("PONG", p.call("PING"));
        }
        return p;
    }

    @Test void failOpenAndClosedWhenServerStopped() throws Exception {
        try (Pool p = stoppedServer()) {
            for (FailureMode m : new FailureMode[] {FailureMode.OPEN, FailureMode.CLOSED}) {
                List<ErrorEvent> events = new ArrayList<>();
                Client c = new Client(p, Options.defaults().withFailure(m).withClosedRetryAfter(Duration.ofSeconds(2)).withOnError(events::add));
                Decision d = c.tokenBucket(5, 1, Duration.ofSeconds(1)).allow("k");
                Decision want = m == FailureMode.OPEN
                    ? new Decision(true, 5, 5, Duration.ZERO, Duration.ZERO, true)
                    : new Decision(false, 5, 0, Duration.ofSeconds(2), Duration.ofSeconds(2), true);
                assertEquals(want, d, m.name());
                assertEquals(1, events.size());
                ErrorEvent e = events.get(0);
                assertEquals("CL.TOKENBUCKET", e.command());
                assertEquals("k", e.key());
                assertNotNull(e.error());
                assertEquals(m, e.mode());
            }
            // ERROR (the default) throws and calls no hook.
            List<ErrorEvent> events = new ArrayList<>();
            Client c = new Client(p, Options.defaults().withOnError(events::add));
            assertThrows(IOException.class, () -> c.window(Limiter.WindowMode.FIXED, 3, Duration.ofMinutes(1)).allow("k"));
            assertTrue(events.isEmpty());
        }
    }

    @Test void failLocalFallback() throws Exception {
        try (Pool p = stoppedServer()) {
            AtomicLong calls = new AtomicLong();
            AtomicLong now = new AtomicLong(1_000_000_000_000L);
            Client c = new Client(p, Options.defaults().withFailure(FailureMode.LOCAL).withOnError(e -> calls.incrementAndGet()), now::get);
            var tb = c.tokenBucket(2, 1, Duration.ofSeconds(1));
            List<Decision> got = List.of(tb.allow("user"), tb.allow("user"), tb.allow("user"));
            assertEquals(List.of(
                new Decision(true, 2, 1, Duration.ZERO, Duration.ofSeconds(1), true),
                new Decision(true, 2, 0, Duration.ZERO, Duration.ofSeconds(2), true),
                new Decision(false, 2, 0, Duration.ofSeconds(1), Duration.ofSeconds(2), true)), got);
            // Another key has its own bucket; time refills it.
            assertTrue(tb.allowN("other", 2).allowed());
            now.addAndGet(1_000_000_000L);
            Decision d = tb.allow("user");
            assertTrue(d.allowed());
            assertEquals(0, d.remaining());
            // Leases fall back to a local semaphore, released by the lease.
            Concurrency cc = c.concurrency(1, Duration.ofMinutes(1));
            try (Lease le = cc.hold("job", 1)) {
                assertEquals("", le.id());
                assertNull(cc.acquire("job", 1).lease());
            }
            assertNotNull(cc.acquire("job", 1).lease());
            // all checks every rule before consuming any.
            var a = c.window(Limiter.WindowMode.FIXED, 1, Duration.ofMinutes(1)).rule("a");
            var b = c.window(Limiter.WindowMode.FIXED, 5, Duration.ofMinutes(1)).rule("b");
            assertTrue(c.all(1, a, b).allowed());
            AllDecision ad = c.all(1, a, b);
            assertFalse(ad.allowed());
            assertEquals(4, ad.decisions().get(1).remaining());
            assertEquals(10, calls.get());
        }
    }

    @Test void timeoutAppliesThePolicy() throws Exception {
        // A server that accepts and never answers.
        try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            List<Socket> held = java.util.Collections.synchronizedList(new ArrayList<>());
            Thread t = new Thread(() -> {
                try {
                    for (;;) held.add(silent.accept());
                } catch (IOException ignored) {
                }
            });
            t.setDaemon(true);
            t.start();
            try (Pool p = new Pool("127.0.0.1", silent.getLocalPort())) {
                List<ErrorEvent> events = new ArrayList<>();
                Client c = new Client(p, Options.defaults().withTimeout(Duration.ofMillis(100)).withFailure(FailureMode.OPEN).withOnError(events::add));
                long t0 = System.nanoTime();
                Decision d = c.leakyBucket(3, 1, Duration.ofSeconds(1)).allow("k");
                assertTrue(d.allowed() && d.fallback());
                assertTrue(System.nanoTime() - t0 < 5_000_000_000L);
                assertEquals(1, events.size());
                assertTrue(events.get(0).error() instanceof java.net.SocketTimeoutException, events.get(0).error().toString());
            }
            synchronized (held) {
                for (Socket s : held) s.close();
            }
        }
    }

    @Test void serverErrorsAreNotFailures() throws Exception {
        try (Server s = Server.start(); Pool p = s.pool()) {
            List<ErrorEvent> events = new ArrayList<>();
            List<String> logged = new ArrayList<>();
            Client c = new Client(p, Options.defaults().withFailure(FailureMode.OPEN).withOnError(events::add).withLog(logged::add));
            assertTrue(c.tokenBucket(5, 1, Duration.ofSeconds(1)).allow("str").allowed());
            RespException e = assertThrows(RespException.class, () -> c.window(Limiter.WindowMode.FIXED, 3, Duration.ofMinutes(1)).allow("str"));
            assertEquals("WRONGTYPE", e.code());
            // A configuration error: thrown, and reported (ConfigTest checks how).
            assertEquals(1, events.size());
            assertTrue(events.get(0).config());
            // A bad argument is the caller's error: thrown, not reported.
            RespException bad = assertThrows(RespException.class, () -> c.tokenBucket(5, 1, Duration.ofSeconds(1)).allowN("str", -1));
            assertEquals("ERR", bad.code());
            assertEquals(1, events.size());
            assertEquals(1, logged.size());
        }
    }
}
