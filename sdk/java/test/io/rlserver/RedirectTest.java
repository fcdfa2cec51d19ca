package io.rlserver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** ASK (with ASKING) and TRYAGAIN, against scripted nodes. */
class RedirectTest {
    @Test void askSendsAskingToTheImportingNodeOnly() throws Exception {
        AtomicInteger bCalls = new AtomicInteger();
        try (FakeNode b = new FakeNode((req, prev) -> {
                if (req.get(0).equals("ASKING")) return "+OK\r\n";
                bCalls.incrementAndGet();
                return prev.size() == 1 && prev.get(0).equals("ASKING") ? FakeNode.DECISION : "-MOVED 1 127.0.0.1:1\r\n";
            });
             FakeNode a = new FakeNode((req, prev) -> req.get(0).equals("CLUSTER") ? FakeNode.slotsTo(0)
                 : "-ASK " + Cluster.slot(req.get(1)) + " 127.0.0.1:" + b.port() + "\r\n")) {
            // a's CLUSTER SLOTS names port 0: point the table at a itself.
            try (Cluster c = new Cluster(List.of("127.0.0.1:" + a.port()), 2000)) {
                for (int s = 0; s < Cluster.SLOTS; s++) c.setSlot(s, "127.0.0.1:" + a.port());
                Client cl = new Client(c, Options.defaults());
                Decision d = cl.window(Limiter.WindowMode.FIXED, 10, Duration.ofMinutes(1)).allow("k");
                assertEquals(new Decision(true, 10, 9, Duration.ZERO, Duration.ofMinutes(1), false), d);
                assertEquals(1, bCalls.get());
                // ASK does not change the table: the next call asks a again.
                assertEquals("127.0.0.1:" + a.port(), c.owner(Cluster.slot("k")));
            }
        }
    }

    @Test void tryAgainIsRetriedAFewTimes() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        try (FakeNode a = new FakeNode((req, prev) -> {
                if (req.get(0).equals("CLUSTER")) return FakeNode.slotsTo(0);
                int n = calls.incrementAndGet();
                if (req.get(1).equals("never")) return "-TRYAGAIN Slot being handed to another node, try again\r\n";
                return n <= 2 ? "-TRYAGAIN Slot being handed to another node, try again\r\n" : FakeNode.DECISION;
            })) {
            try (Cluster c = new Cluster(List.of("127.0.0.1:" + a.port()), 2000)) {
                for (int s = 0; s < Cluster.SLOTS; s++) c.setSlot(s, "127.0.0.1:" + a.port());
                Client cl = new Client(c, Options.defaults());
                var w = cl.window(Limiter.WindowMode.FIXED, 10, Duration.ofMinutes(1));
                assertEquals(9, w.allow("k").remaining());
                assertEquals(3, calls.get());
                // Still TRYAGAIN after the retries: the error, which the failure policy treats as unreachable.
                calls.set(0);
                RespException e = assertThrows(RespException.class, () -> w.allow("never"));
                assertEquals("TRYAGAIN", e.code());
                assertEquals(4, calls.get());
                Decision open = cl.withOptions(Options.defaults().withFailure(FailureMode.OPEN)).window(Limiter.WindowMode.FIXED, 10, Duration.ofMinutes(1)).allow("never");
                assertEquals(true, open.fallback());
            }
        }
    }
}
