package io.rlserver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Slot routing over a two-node static cluster (--cluster-config), as sdk/go's cluster test. */
class ClusterTest {
    static final String PASSWORD = "s3cret";
    static final List<Server> nodes = new ArrayList<>();
    static Path dir;
    static Cluster cluster;

    @BeforeAll static void start() throws Exception {
        dir = Files.createTempDirectory("rlserver-sdk-java");
        // Ports are picked free, then bound by the servers; retried if one was taken meanwhile.
        for (int attempt = 0; attempt < 5 && nodes.size() < 2; attempt++) {
            for (Server s : nodes) s.close();
            nodes.clear();
            int[] ports = new int[2];
            for (int i = 0; i < 2; i++) {
                try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
                    ports[i] = ss.getLocalPort();
                }
            }
            Path cfg = dir.resolve("cluster.json");
            Files.writeString(cfg, String.format("{\"version\": 1, \"shards\": ["
                + "{\"slots\": [[0, 8191]], \"primary\": {\"id\": \"%040d\", \"host\": \"127.0.0.1\", \"port\": %d}, \"replicas\": []},"
                + "{\"slots\": [[8192, 16383]], \"primary\": {\"id\": \"%040d\", \"host\": \"127.0.0.1\", \"port\": %d}, \"replicas\": []}]}",
                1, ports[0], 2, ports[1]));
            try {
                for (int p : ports) nodes.add(Server.start("--port", "" + p, "--cluster-config", cfg.toString(), "--requirepass", PASSWORD));
            } catch (Exception e) {
                // a port was taken: retry
            }
        }
        assertEquals(2, nodes.size(), "could not start a two-node cluster");
        // Without the password the slot table cannot even be read (by the first call).
        RespException e = org.junit.jupiter.api.Assertions.assertThrows(RespException.class, () -> {
            try (Cluster c = new Cluster(List.of("127.0.0.1:" + nodes.get(0).port), 0)) {
                c.call("PING");
            }
        });
        assertEquals("NOAUTH", e.code());
        // Every node's connections authenticate, the second node's too (reached by slot).
        cluster = new Cluster(List.of("127.0.0.1:" + nodes.get(0).port), 0, null, PASSWORD);
        cluster.onEachPrimary("DEBUG", "CLOCK", "SET", 1_800_000_000_000L);
    }

    @AfterAll static void stop() throws Exception {
        if (cluster != null) cluster.close();
        for (Server s : nodes) s.close();
        try (var w = Files.walk(dir)) {
            w.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /** The README's Cluster block (example/ClusterExample.java's limit) on this cluster: both rules on one slot. */
    @Test void readmeClusterExampleRuns() throws Exception {
        var limit = Class.forName("ClusterExample").getDeclaredMethod("limit", List.class, String.class);
        limit.setAccessible(true);
        List<String> seeds = List.of("127.0.0.1:" + nodes.get(0).port);
        for (long want = 9; want >= 8; want--) {
            AllDecision d = (AllDecision) limit.invoke(null, seeds, PASSWORD);
            assertTrue(d.allowed());
            assertEquals(2, d.decisions().size());
            assertEquals(want, d.decisions().get(0).remaining());
            assertEquals(want + 990, d.decisions().get(1).remaining());
            assertFalse(d.decisions().get(0).fallback());
        }
        assertEquals(cluster.call("CLUSTER", "KEYSLOT", "{user:42}:m"), cluster.call("CLUSTER", "KEYSLOT", "{user:42}:d"));
    }

    @Test void slotsMatchTheServer() throws Exception {
        for (String k : new String[] {"foo", "bar", "{user1}:a", "x{user1}y", "{}a", "a{}b{c}", "{a", "héllo", ""}) {
            assertEquals(cluster.call("CLUSTER", "KEYSLOT", k), (long) Cluster.slot(k), k);
        }
        assertEquals(Cluster.slot("user1"), Cluster.slot("{user1}:a"));
    }

    @Test void limitersAcrossNodes() throws Exception {
        Client c = new Client(cluster, Options.defaults());
        var tb = c.tokenBucket(5, 1, Duration.ofSeconds(1));
        assertTrue(Cluster.slot("foo") >= 8192 && Cluster.slot("bar") < 8192);
        for (String key : new String[] {"foo", "bar"}) {
            assertEquals(4, tb.allow(key).remaining());
            assertEquals(3, tb.allow(key).remaining());
        }
        assertNotEquals(cluster.owner(Cluster.slot("foo")), cluster.owner(Cluster.slot("bar")));
        // CL.ALL with a hash tag; its lease released on the right node.
        var cc = c.concurrency(1, Duration.ofMinutes(1));
        AllDecision ad = c.all(1, cc.rule("{u7}:c"), c.window(Limiter.WindowMode.FIXED, 3, Duration.ofMinutes(1)).rule("{u7}:w"));
        assertTrue(ad.allowed());
        assertNotNull(ad.leases().get(0));
        assertFalse(cc.acquire("{u7}:c", 1).decision().allowed());
        assertTrue(ad.leases().get(0).release());
        try (Lease le = cc.hold("{u7}:c", 1)) {
            assertFalse(le.id().isEmpty());
        }
        assertTrue(cc.acquire("{u7}:c", 1).decision().allowed());
    }

    @Test void followsMovedAndPipelinesPerNode() throws Exception {
        int s = Cluster.slot("m:foo");
        String right = cluster.owner(s);
        String wrong = cluster.owner(Cluster.slot("m:bar"));
        assertNotEquals(right, wrong);
        cluster.setSlot(s, wrong);
        Object r = cluster.call("CL.WINDOW", "m:foo", 10, "1m", 1, "FIXED");
        assertEquals(List.of(1L, 10L, 9L, 0L, 60000L), r);
        assertEquals(right, cluster.owner(s));
        // A pipeline over both nodes, one of them stale, in request order.
        cluster.setSlot(s, wrong);
        List<Object[]> reqs = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            reqs.add(new Object[] {"CL.WINDOW", "m:foo", 10, "1m", 1, "FIXED"});
            reqs.add(new Object[] {"CL.WINDOW", "m:bar", 10, "1m", 1, "FIXED"});
        }
        List<Object> replies = cluster.pipeline(reqs);
        for (int i = 0; i < 4; i++) {
            assertEquals(8L - i, ((List<?>) replies.get(2 * i)).get(2));
            assertEquals(9L - i, ((List<?>) replies.get(2 * i + 1)).get(2));
        }
        assertEquals(right, cluster.owner(s));
    }
}
