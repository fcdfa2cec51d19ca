package io.rlserver;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * One RESP2 connection: writes requests as arrays of bulk strings and parses
 * replies into Long, String (simple and bulk), null, List, or RespException
 * (error replies are returned, not thrown, so a pipeline reads them all).
 */
public final class Connection implements AutoCloseable {
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    final String address;

    public Connection(String host, int port, int timeoutMs) throws IOException { this(host, port, timeoutMs, timeoutMs); }

    /** Connects within connectMs (0: no bound); replies are awaited readMs (0: no bound). */
    public Connection(String host, int port, int connectMs, int readMs) throws IOException {
        socket = new Socket();
        socket.setTcpNoDelay(true);
        try {
            socket.connect(new InetSocketAddress(host, port), Math.max(0, connectMs));
        } catch (IOException e) {
            socket.close();
            throw e;
        }
        socket.setSoTimeout(Math.max(0, readMs));
        in = new BufferedInputStream(socket.getInputStream(), 16384);
        out = new BufferedOutputStream(socket.getOutputStream(), 16384);
        address = host + ":" + port;
    }

    /** Sets the read timeout of the next replies (0: none). */
    public void timeout(int ms) throws IOException { socket.setSoTimeout(Math.max(0, ms)); }

    /** Buffers one request; flush sends it. */
    public void write(Object... args) throws IOException {
        writeHeader('*', args.length);
        for (Object a : args) {
            byte[] b = (a instanceof byte[] bs) ? bs : String.valueOf(a).getBytes(StandardCharsets.UTF_8);
            writeHeader('$', b.length);
            out.write(b);
            out.write('\r');
            out.write('\n');
        }
    }

    private void writeHeader(char t, int n) throws IOException {
        out.write(t);
        out.write(Integer.toString(n).getBytes(StandardCharsets.US_ASCII));
        out.write('\r');
        out.write('\n');
    }

    public void flush() throws IOException { out.flush(); }

    /** One request, one reply; an error reply is thrown. */
    public Object call(Object... args) throws IOException {
        write(args);
        flush();
        Object r = read();
        if (r instanceof RespException e) throw e;
        return r;
    }

    /** Sends every request at once and reads every reply (errors as RespException values). */
    public List<Object> pipeline(List<Object[]> requests) throws IOException {
        for (Object[] r : requests) write(r);
        flush();
        List<Object> replies = new ArrayList<>(requests.size());
        for (int i = 0; i < requests.size(); i++) replies.add(read());
        return replies;
    }

    /** Reads one reply. */
    public Object read() throws IOException {
        int t = in.read();
        if (t < 0) throw new EOFException("connection closed by server");
        String line = readLine();
        switch (t) {
            case '+': return line;
            case '-': return new RespException(line);
            case ':': return Long.parseLong(line);
            case '$': {
                int n = Integer.parseInt(line);
                if (n < 0) return null;
                byte[] b = in.readNBytes(n);
                if (b.length < n) throw new EOFException("short bulk string");
                in.read();
                in.read();
                return new String(b, StandardCharsets.UTF_8);
            }
            case '*': {
                int n = Integer.parseInt(line);
                if (n < 0) return null;
                List<Object> l = new ArrayList<>(n);
                for (int i = 0; i < n; i++) l.add(read());
                return l;
            }
            default: throw new IOException("bad RESP type byte " + (char) t);
        }
    }

    private String readLine() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream(16);
        for (;;) {
            int c = in.read();
            if (c < 0) throw new EOFException("connection closed by server");
            if (c == '\r') {
                in.read();
                return b.toString(StandardCharsets.UTF_8);
            }
            b.write(c);
        }
    }

    @Override public void close() {
        try { socket.close(); } catch (IOException ignored) { }
    }
}
