package io.rlserver;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.List;

/**
 * A small pool of connections to one server. With a password, each new
 * connection authenticates first (AUTH [user] password), as with
 * --requirepass or an ACL user.
 */
public final class Pool implements Redis {
    private final String host;
    private final int port;
    private final int timeoutMs;
    private final int maxIdle;
    private final String user;
    private final String password;
    private final ArrayDeque<Connection> idle = new ArrayDeque<>();
    private boolean closed;

    /**
     * A pool to host:port; timeoutMs bounds connect and each reply (0: none;
     * a Client's Options.timeout then bounds both for its calls);
     * user (null: the default user) and password (null: no AUTH) authenticate
     * each connection.
     */
    public Pool(String host, int port, int timeoutMs, int maxIdle, String user, String password) {
        this.host = host;
        this.port = port;
        this.timeoutMs = timeoutMs;
        this.maxIdle = maxIdle;
        this.user = user;
        this.password = password;
    }

    public Pool(String host, int port, int timeoutMs, int maxIdle) { this(host, port, timeoutMs, maxIdle, null, null); }

    public Pool(String host, int port) { this(host, port, 0, 16); }

    public String address() { return host + ":" + port; }

    /**
     * An idle connection, or a new one: connecting and AUTH are bounded by
     * callMs (a call's own timeout) or else the pool's timeoutMs, whichever
     * is shorter and set, so a server that never completes a connection
     * cannot hold a call longer than its timeout.
     */
    Connection take(int callMs) throws IOException {
        synchronized (idle) {
            Connection c = idle.pollFirst();
            if (c != null) return c;
        }
        int bound = timeoutMs <= 0 ? Math.max(0, callMs) : callMs <= 0 ? timeoutMs : Math.min(timeoutMs, callMs);
        Connection c = new Connection(host, port, bound, bound);
        try {
            if (password != null) {
                if (user != null) c.call("AUTH", user, password); else c.call("AUTH", password);
            }
            c.timeout(timeoutMs);
        } catch (IOException | RuntimeException e) {
            c.close();
            throw e;
        }
        return c;
    }

    void give(Connection c) {
        synchronized (idle) {
            if (!closed && idle.size() < maxIdle) {
                idle.addFirst(c);
                return;
            }
        }
        c.close();
    }

    /** Runs fn on a pooled connection; a connection that failed is dropped. */
    <T> T with(IOFunction<Connection, T> fn) throws IOException { return with(0, fn); }

    /** with, connecting within callMs (see take). */
    <T> T with(int callMs, IOFunction<Connection, T> fn) throws IOException {
        Connection c = take(callMs);
        try {
            T r = fn.apply(c);
            give(c);
            return r;
        } catch (IOException | RuntimeException e) {
            if (e instanceof RespException) give(c); else c.close();
            throw e;
        }
    }

    @Override public Object call(Object... args) throws IOException { return with(c -> c.call(args)); }

    @Override public Object call(int ms, Object... args) throws IOException {
        if (ms <= 0) return call(args);
        return with(ms, c -> {
            c.timeout(ms);
            try { return c.call(args); } finally { c.timeout(timeoutMs); }
        });
    }

    @Override public List<Object> pipeline(List<Object[]> requests) throws IOException {
        return with(c -> c.pipeline(requests));
    }

    @Override public void close() {
        synchronized (idle) {
            closed = true;
            for (Connection c : idle) c.close();
            idle.clear();
        }
    }

    @FunctionalInterface interface IOFunction<A, B> { B apply(A a) throws IOException; }
}
