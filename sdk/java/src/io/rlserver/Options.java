package io.rlserver;

import java.time.Duration;
import java.util.function.Consumer;

/**
 * Options of a Client: timeout bounds each call, connecting included (ZERO:
 * none), failure is the policy while the server is unreachable (a network
 * error, a timeout, or a LOADING/CLUSTERDOWN/TRYAGAIN/MASTERDOWN reply),
 * onError is called each time the policy answers and for each configuration
 * error, closedRetryAfter is a fail-closed decision's retry after, and log
 * receives a line for each configuration error (default: System.Logger
 * "io.rlserver" at WARNING).
 */
public record Options(Duration timeout, FailureMode failure, Consumer<ErrorEvent> onError, Duration closedRetryAfter, Consumer<String> log) {
    public Options {
        if (timeout == null) timeout = Duration.ZERO;
        if (failure == null) failure = FailureMode.ERROR;
        if (closedRetryAfter == null || closedRetryAfter.isZero() || closedRetryAfter.isNegative()) closedRetryAfter = Duration.ofSeconds(1);
        if (log == null) log = line -> System.getLogger("io.rlserver").log(System.Logger.Level.WARNING, line);
    }

    public Options(Duration timeout, FailureMode failure, Consumer<ErrorEvent> onError, Duration closedRetryAfter) {
        this(timeout, failure, onError, closedRetryAfter, null);
    }

    public static Options defaults() { return new Options(null, null, null, null, null); }

    public Options withTimeout(Duration d) { return new Options(d, failure, onError, closedRetryAfter, log); }
    public Options withFailure(FailureMode m) { return new Options(timeout, m, onError, closedRetryAfter, log); }
    public Options withOnError(Consumer<ErrorEvent> f) { return new Options(timeout, failure, f, closedRetryAfter, log); }
    public Options withClosedRetryAfter(Duration d) { return new Options(timeout, failure, onError, d, log); }
    public Options withLog(Consumer<String> l) { return new Options(timeout, failure, onError, closedRetryAfter, l); }
}
