package io.rlserver;

import java.io.IOException;
import java.util.List;

/** What the limiters need of a server: a standalone pool or a cluster. */
public interface Redis extends AutoCloseable {
    /** Sends one command; an error reply is thrown as RespException. */
    Object call(Object... args) throws IOException;

    /** Sends several commands in one round trip (per node); errors come back as RespException values. */
    List<Object> pipeline(List<Object[]> requests) throws IOException;

    /** call with a reply timeout in ms (0: the connection's default). */
    default Object call(int timeoutMs, Object... args) throws IOException { return call(args); }

    @Override void close();
}
