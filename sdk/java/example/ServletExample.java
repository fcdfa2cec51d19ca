import io.rlserver.Client;
import io.rlserver.FailureMode;
import io.rlserver.Options;
import io.rlserver.Pool;
import io.rlserver.RateLimitServletFilter;
import java.time.Duration;
import javax.servlet.ServletContext;
import javax.servlet.ServletContextEvent;
import javax.servlet.ServletContextListener;
import javax.servlet.annotation.WebListener;

/**
 * The README's Servlet set-up: a listener that puts RateLimitServletFilter
 * in front of /api/* (10 requests per second, burst 20, per API key, else per
 * client address) when the web application starts. register's code is the
 * README's block (ReadmeTest holds them equal; ServletFilterTest runs it).
 */
@WebListener
public class ServletExample implements ServletContextListener {
    @Override public void contextInitialized(ServletContextEvent e) {
        register(e.getServletContext(), "127.0.0.1", 6379);
    }

    static void register(ServletContext ctx, String host, int port) {
        Client rl = new Client(new Pool(host, port),
            Options.defaults().withTimeout(Duration.ofMillis(50)).withFailure(FailureMode.OPEN));
        ctx.addFilter("rlserver", new RateLimitServletFilter(rl.tokenBucket(20, 10, Duration.ofSeconds(1)))
                .key(r -> r.getHeader("X-Api-Key") != null ? "key:" + r.getHeader("X-Api-Key") : "ip:" + r.getRemoteAddr())
                .xRateLimit(true))
            .addMappingForUrlPatterns(null, false, "/api/*");  // keys "rl:default:tokenbucket:key:..."
    }
}
