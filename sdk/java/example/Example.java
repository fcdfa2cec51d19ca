import com.sun.net.httpserver.HttpServer;
import io.rlserver.Client;
import io.rlserver.FailureMode;
import io.rlserver.Options;
import io.rlserver.Pool;
import io.rlserver.RateLimitFilter;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * A JDK HTTP server on :8080 whose /api allows 10 requests per client IP per
 * second, burst 20, against rlserver on 127.0.0.1:6379 (RLSERVER_ADDR), failing
 * open after 50 ms. Build: ./build.sh; run: java -cp build/classes:build/example Example
 */
public class Example {
    public static void main(String[] args) throws Exception {
        String[] addr = System.getenv().getOrDefault("RLSERVER_ADDR", "127.0.0.1:6379").split(":");
        Client rl = new Client(new Pool(addr[0], Integer.parseInt(addr[1])),
            Options.defaults().withTimeout(Duration.ofMillis(50)).withFailure(FailureMode.OPEN));
        HttpServer server = HttpServer.create(new InetSocketAddress(8080), 0);
        server.createContext("/api", x -> {
            byte[] b = "hello\n".getBytes();
            x.sendResponseHeaders(200, b.length);
            x.getResponseBody().write(b);
            x.close();
        }).getFilters().add(new RateLimitFilter(rl.tokenBucket(20, 10, Duration.ofSeconds(1))).xRateLimit(true));
        server.start();
        System.out.println("listening on :8080");
    }
}
