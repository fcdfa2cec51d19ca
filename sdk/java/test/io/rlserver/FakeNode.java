package io.rlserver;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;

/**
 * A scripted RESP node for the redirect tests: answers each request with
 * handler(request, previous request on the connection) as raw RESP.
 */
final class FakeNode implements AutoCloseable {
    final ServerSocket ss;
    final List<Socket> conns = java.util.Collections.synchronizedList(new ArrayList<>());

    FakeNode(BiFunction<List<String>, List<String>, String> handler) throws IOException {
        ss = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
        Thread t = new Thread(() -> {
            try {
                for (;;) {
                    Socket s = ss.accept();
                    conns.add(s);
                    Thread c = new Thread(() -> serve(s, handler));
                    c.setDaemon(true);
                    c.start();
                }
            } catch (IOException ignored) {
            }
        });
        t.setDaemon(true);
        t.start();
    }

    int port() { return ss.getLocalPort(); }

    private static void serve(Socket s, BiFunction<List<String>, List<String>, String> handler) {
        try (s) {
            InputStream in = new java.io.BufferedInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            List<String> prev = List.of();
            for (;;) {
                List<String> req = readRequest(in);
                if (req == null) return;
                out.write(handler.apply(req, prev).getBytes(StandardCharsets.UTF_8));
                out.flush();
                prev = req;
            }
        } catch (IOException ignored) {
        }
    }

    private static String line(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        for (int c; (c = in.read()) != '\r'; ) {
            if (c < 0) return null;
            b.append((char) c);
        }
        in.read();
        return b.toString();
    }

    private static List<String> readRequest(InputStream in) throws IOException {
        String h = line(in);
        if (h == null) return null;
        int n = Integer.parseInt(h.substring(1));
        List<String> args = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            int len = Integer.parseInt(line(in).substring(1));
            args.add(new String(in.readNBytes(len), StandardCharsets.UTF_8));
            in.read();
            in.read();
        }
        return args;
    }

    /** CLUSTER SLOTS giving every slot to the node on port. */
    static String slotsTo(int port) { return "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:" + port + "\r\n"; }

    static final String DECISION = "*5\r\n:1\r\n:10\r\n:9\r\n:0\r\n:60000\r\n";

    @Override public void close() throws IOException {
        ss.close();
        synchronized (conns) {
            for (Socket s : conns) s.close();
        }
    }
}
