package io.rlserver;

import java.time.Duration;
import java.util.List;

/**
 * The SDK's overhead per decision over the raw Pool.call it makes
 * (./build.sh bench): alternates the raw CL.TOKENBUCKET call and the SDK's
 * allow on one pooled connection to a local server, so that load on the
 * machine hits both alike, and prints the SDK's extra time (overhead-%).
 */
public final class Bench {
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 50_000;
        try (Server s = Server.start(); Pool pool = s.pool()) {
            for (Options o : new Options[] {Options.defaults(), Options.defaults().withTimeout(Duration.ofSeconds(1)).withFailure(FailureMode.OPEN)}) {
                var tb = new Client(pool, o).tokenBucket(1_000_000, 1_000_000, Duration.ofSeconds(1));
                Object[] raw = {"CL.TOKENBUCKET", "bench", "1000000", "1000000", "1s", 1};
                for (int run = 0; run < 6; run++) {
                    long tr = 0, ts = 0;
                    for (int i = 0; i < rounds; i++) {
                        long t0 = System.nanoTime();
                        Object v = pool.call(raw);
                        long t1 = System.nanoTime();
                        Decision d = tb.allow("bench");
                        long t2 = System.nanoTime();
                        if (((List<?>) v).size() != 5 || !d.allowed()) throw new AssertionError(v + " " + d);
                        tr += t1 - t0;
                        ts += t2 - t1;
                    }
                    if (run == 0) continue; // warm-up
                    System.out.printf("%s run %d: raw %d ns, sdk %d ns, overhead %.2f%%%n",
                        o.timeout().isZero() ? "no-timeout" : "timeout", run, tr / rounds, ts / rounds, 100.0 * (ts - tr) / tr);
                }
            }
        }
    }
}
