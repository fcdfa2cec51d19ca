package io.rlserver;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** One rlserver process on a free 127.0.0.1 port, in memory, with DEBUG CLOCK enabled. */
final class Server implements AutoCloseable {
    private static final Pattern LISTENING = Pattern.compile("listening on (127\\.0\\.0\\.1):(\\d+)");
    final Process proc;
    final String host;
    final int port;

    private Server(Process p, String host, int port) {
        this.proc = p;
        this.host = host;
        this.port = port;
    }

    static Server start(String... extra) throws Exception {
        String bin = System.getenv("RLSERVER_BIN");
        if (bin == null || bin.isEmpty()) throw new IllegalStateException("RLSERVER_BIN is not set (run ./build.sh test)");
        List<String> cmd = new ArrayList<>(List.of(bin, "--dir", "", "--enable-debug-command", "--bind", "127.0.0.1", "--port", "0"));
        cmd.addAll(List.of(extra));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        CompletableFuture<String[]> addr = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    Matcher m = LISTENING.matcher(line);
                    if (!addr.isDone() && m.find()) addr.complete(new String[] {m.group(1), m.group(2)});
                }
            } catch (IOException ignored) {
            }
            addr.completeExceptionally(new IllegalStateException("rlserver exited before listening"));
        });
        t.setDaemon(true);
        t.start();
        String[] a;
        try {
            a = addr.get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            p.destroyForcibly();
            throw e;
        }
        return new Server(p, a[0], Integer.parseInt(a[1]));
    }

    Pool pool() { return new Pool(host, port); }

    /** Kills the server and waits for it to exit, so its port refuses. */
    @Override public void close() throws InterruptedException {
        proc.destroyForcibly();
        proc.waitFor();
    }
}
