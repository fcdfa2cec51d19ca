import io.rlserver.AllDecision;
import io.rlserver.Client;
import io.rlserver.Cluster;
import io.rlserver.FailureMode;
import io.rlserver.Limiter;
import io.rlserver.Options;
import java.io.IOException;
import java.time.Duration;
import java.util.List;

/**
 * The README's Redis Cluster set-up: two limits on one user, checked
 * together by one CL.ALL, their keys sharing the hash tag {user:42}. Its code
 * is the README's block (ReadmeTest holds them equal; ClusterTest runs it on
 * a two-node cluster). Run: java -cp build/classes:build/example ClusterExample
 */
public class ClusterExample {
    static AllDecision limit(List<String> seeds, String password) throws IOException {
        Client rl = new Client(new Cluster(seeds, 0, null, password),   // seeds: any nodes; password null without one
            Options.defaults().withTimeout(Duration.ofMillis(50)).withFailure(FailureMode.OPEN));
        Limiter.Window perMinute = rl.window(Limiter.WindowMode.FIXED, 10, Duration.ofMinutes(1));
        Limiter.Window perDay = rl.window(Limiter.WindowMode.FIXED, 1000, Duration.ofDays(1));
        AllDecision d = rl.all(1, perMinute.rule("{user:42}:m"), perDay.rule("{user:42}:d"));  // one slot: one tag
        return d;
    }

    public static void main(String[] args) throws Exception {
        System.out.println(limit(List.of("10.0.0.1:6379", "10.0.0.2:6379"), "password"));
    }
}
