package io.rlserver;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Redis Cluster routing over one Pool per node: the slot of a command's key
 * (CRC16 with {hash tags}), the slot table from CLUSTER SLOTS, MOVED (table
 * updated, command retried at the owner), ASK (ASKING then the command at
 * the importing node) and TRYAGAIN (retried a few times).
 */
public final class Cluster implements Redis {
    public static final int SLOTS = 16384;
    private static final int MAX_REDIRECTS = 5;
    private static final int TRYAGAIN_RETRIES = 3;
    private static final Set<String> KEYLESS = Set.of("PING", "ECHO", "FLUSHALL", "FLUSHDB", "DEBUG", "CLUSTER", "INFO", "COMMAND",
        "HELLO", "TIME", "DBSIZE", "ROLE", "WAIT", "READONLY", "READWRITE", "ASKING", "CONFIG", "SCAN");

    private final List<String> seeds;
    private final int timeoutMs;
    private final String user;
    private final String password;
    private final Map<String, Pool> pools = new HashMap<>();
    private final String[] slots = new String[SLOTS];
    private boolean loaded;

    /**
     * A cluster reached through any of seeds ("host:port"); timeoutMs bounds
     * connect and replies (0: none; a Client's Options.timeout then bounds
     * its calls); user (null: the default user) and password (null: no AUTH)
     * authenticate every connection to every node. Nothing is connected
     * here: the slot table is loaded by the first call (under that call's
     * timeout), so a cluster that is down at start-up meets the failure
     * policy rather than an exception. (The throws clause stays for source
     * compatibility.)
     */
    public Cluster(List<String> seeds, int timeoutMs, String user, String password) throws IOException {
        if (seeds.isEmpty()) throw new IllegalArgumentException("rlserver: no cluster seed");
        this.seeds = List.copyOf(seeds);
        this.timeoutMs = timeoutMs;
        this.user = user;
        this.password = password;
    }

    public Cluster(List<String> seeds, int timeoutMs) throws IOException { this(seeds, timeoutMs, null, null); }

    public Cluster(String... seeds) throws IOException { this(List.of(seeds), 0); }

    /** Reloads the slot table with CLUSTER SLOTS from the first node that answers. */
    public void refresh() throws IOException { refresh(0); }

    /** refresh, each node asked within ms (0: the pools' timeout). */
    void refresh(int ms) throws IOException {
        IOException last = null;
        List<String> tryNodes = new ArrayList<>(seeds);
        synchronized (this) {
            for (String a : slots) if (a != null && !tryNodes.contains(a)) tryNodes.add(a);
        }
        for (String node : tryNodes) {
            try {
                Object v = pool(node).call(ms, new Object[] {"CLUSTER", "SLOTS"});
                String[] table = new String[SLOTS];
                for (Object r : (List<?>) v) {
                    List<?> range = (List<?>) r;
                    int from = (int) (long) (Long) range.get(0), to = (int) (long) (Long) range.get(1);
                    List<?> primary = (List<?>) range.get(2);
                    String addr = primary.get(0) + ":" + primary.get(1);
                    for (int s = from; s <= to; s++) table[s] = addr;
                }
                synchronized (this) {
                    System.arraycopy(table, 0, slots, 0, SLOTS);
                    loaded = true;
                }
                return;
            } catch (IOException e) {
                last = e;
            }
        }
        throw last != null ? last : new IOException("rlserver: no cluster seed");
    }

    synchronized Pool pool(String addr) {
        return pools.computeIfAbsent(addr, a -> {
            int i = a.lastIndexOf(':');
            return new Pool(a.substring(0, i), Integer.parseInt(a.substring(i + 1)), timeoutMs, 16, user, password);
        });
    }

    /** For tests: points a slot at another node, as a stale table would. */
    synchronized void setSlot(int slot, String addr) {
        slots[slot] = addr;
        loaded = true;
    }

    synchronized String owner(int slot) { return slots[slot]; }

    /** The key slot of key: CRC16 (XMODEM) of its {hash tag} if it has a non-empty one, modulo 16384. */
    public static int slot(String key) {
        byte[] b = key.getBytes(StandardCharsets.UTF_8);
        int from = 0, to = b.length;
        for (int i = 0; i < b.length; i++) {
            if (b[i] == '{') {
                for (int j = i + 1; j < b.length; j++) {
                    if (b[j] == '}') {
                        if (j > i + 1) {
                            from = i + 1;
                            to = j;
                        }
                        break;
                    }
                }
                break;
            }
        }
        return crc16(b, from, to) & (SLOTS - 1);
    }

    static int crc16(byte[] b, int from, int to) {
        int crc = 0;
        for (int i = from; i < to; i++) {
            crc ^= (b[i] & 0xff) << 8;
            for (int k = 0; k < 8; k++) crc = (crc & 0x8000) != 0 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
        }
        return crc;
    }

    /** The routing key of a command, or null for a keyless one. */
    static String keyOf(Object[] args) {
        String name = String.valueOf(args[0]).toUpperCase();
        if (KEYLESS.contains(name) || args.length < 2) return null;
        if (name.equals("CL.ALL")) return args.length > 3 ? String.valueOf(args[3]) : null;
        return String.valueOf(args[1]);
    }

    private String nodeFor(Object[] args) {
        String key = keyOf(args);
        String addr = key == null ? null : owner(slot(key));
        if (addr == null) {
            synchronized (this) {
                for (String a : slots) if (a != null) return a;
            }
            return seeds.get(0);
        }
        return addr;
    }

    @Override public Object call(Object... args) throws IOException { return call(0, args); }

    private synchronized boolean loaded() { return loaded; }

    @Override public Object call(int ms, Object... args) throws IOException {
        if (!loaded()) refresh(ms);
        Object r;
        try {
            r = route(nodeFor(args), ms, args, null);
        } catch (IOException e) {
            // The node may be gone (failover, removal): reload the table for
            // the next call, and report this one's error.
            try {
                refresh(ms);
            } catch (IOException ignored) {
            }
            throw e;
        }
        if (r instanceof RespException e) throw e;
        return r;
    }

    /** Sends args to addr, following redirects; returns the reply or the final error reply. */
    private Object route(String addr, int ms, Object[] args, Object first) throws IOException {
        boolean asking = false;
        int tryagain = 0;
        Object r = first;
        for (int hop = 0; hop <= MAX_REDIRECTS + TRYAGAIN_RETRIES; hop++) {
            if (r == null || hop > 0) {
                final boolean ask = asking;
                r = pool(addr).with(ms, c -> {
                    if (ms > 0) c.timeout(ms);
                    try {
                        if (ask) {
                            List<Object> two = c.pipeline(List.of(new Object[] {"ASKING"}, args));
                            return two.get(1);
                        }
                        c.write(args);
                        c.flush();
                        return c.read();
                    } finally {
                        if (ms > 0) c.timeout(timeoutMs);
                    }
                });
            }
            asking = false;
            if (!(r instanceof RespException e)) return r;
            String[] w = e.getMessage().split(" ");
            switch (w[0]) {
                case "MOVED" -> {
                    if (w.length < 3) return r;
                    setSlot(Integer.parseInt(w[1]), w[2]);
                    addr = w[2];
                }
                case "ASK" -> {
                    if (w.length < 3) return r;
                    addr = w[2];
                    asking = true;
                }
                case "TRYAGAIN" -> {
                    if (++tryagain > TRYAGAIN_RETRIES) return r;
                    try {
                        Thread.sleep(10L * tryagain);
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        return r;
                    }
                }
                default -> {
                    return r;
                }
            }
        }
        return r;
    }

    /** Groups the requests by node, pipelines each group, then follows any redirects one by one. */
    @Override public List<Object> pipeline(List<Object[]> requests) throws IOException {
        if (!loaded()) refresh(0);
        Map<String, List<Integer>> byNode = new LinkedHashMap<>();
        for (int i = 0; i < requests.size(); i++) byNode.computeIfAbsent(nodeFor(requests.get(i)), k -> new ArrayList<>()).add(i);
        Object[] out = new Object[requests.size()];
        for (var e : byNode.entrySet()) {
            List<Object[]> batch = new ArrayList<>();
            for (int i : e.getValue()) batch.add(requests.get(i));
            List<Object> replies = pool(e.getKey()).pipeline(batch);
            for (int j = 0; j < replies.size(); j++) {
                int i = e.getValue().get(j);
                Object r = replies.get(j);
                if (r instanceof RespException x && (x.code().equals("MOVED") || x.code().equals("ASK") || x.code().equals("TRYAGAIN"))) {
                    r = route(e.getKey(), 0, requests.get(i), r);
                }
                out[i] = r;
            }
        }
        return java.util.Arrays.asList(out);
    }

    /** Runs a keyless command on every primary (e.g. DEBUG CLOCK SET in tests). */
    public List<Object> onEachPrimary(Object... args) throws IOException {
        if (!loaded()) refresh(0);
        List<String> nodes = new ArrayList<>();
        synchronized (this) {
            for (String a : slots) if (a != null && !nodes.contains(a)) nodes.add(a);
        }
        List<Object> out = new ArrayList<>();
        for (String n : nodes) out.add(pool(n).call(args));
        return out;
    }

    @Override public synchronized void close() {
        for (Pool p : pools.values()) p.close();
        pools.clear();
    }
}
