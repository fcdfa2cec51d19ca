import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import io.rlserver.Client;
import io.rlserver.FailureMode;
import io.rlserver.Options;
import io.rlserver.Pool;
import io.rlserver.RateLimitFilter;
import io.rlserver.RespException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * A JDK HTTP server on :8080 whose /api allows 10 requests per second, burst
 * 20, per API key (else per client IP), against rlserver on 127.0.0.1:6379,
 * failing open after 50 ms. Its code is the README's example (ReadmeTest holds
 * them equal). Build: ./build.sh; run: java -cp build/classes:build/example Example
 */
public class Example {
    public static void main(String[] args) throws Exception {
        HttpHandler handler = x -> {
            byte[] b = "hello\n".getBytes();
            x.sendResponseHeaders(200, b.length);
            x.getResponseBody().write(b);
            x.close();
        };

        Client rl = new Client(new Pool("127.0.0.1", 6379),   // or new Cluster("10.0.0.1:6379")
            Options.defaults().withTimeout(Duration.ofMillis(50))  // bounds connecting too
                .withFailure(FailureMode.OPEN)
                .withOnError(e -> System.err.println("rlserver: " + e.error())));
        try {
            rl.check();                   // a wrong password is reported here, at start
        } catch (IOException | RespException e) {
            System.err.println("rlserver: " + e);   // the failure policy still applies
        }
        HttpServer server = HttpServer.create(new InetSocketAddress(8080), 0);
        server.createContext("/api", handler).getFilters().add(
            new RateLimitFilter(rl.tokenBucket(20, 10, Duration.ofSeconds(1)))  // burst 20, 10/s
                .key(x -> {                    // the API key, else the client IP
                    String k = x.getRequestHeaders().getFirst("X-Api-Key");
                    return k != null ? "key:" + k : "ip:" + RateLimitFilter.keyByIp(x);
                })                             // sent as "rl:default:tokenbucket:key:..."
                .xRateLimit(true));
        server.start();

        System.out.println("listening on :8080");
    }
}
