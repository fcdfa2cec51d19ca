package io.rlserver;

import java.time.Duration;
import java.util.function.Consumer;

/**
 * Options of a Client: timeout bounds each call (ZERO: none), failure is the
 * policy while the server is unreachable (a network error, a timeout, or a
 * LOADING/CLUSTERDOWN/TRYAGAIN/MASTERDOWN reply), onError is called each
 * time the policy answers, closedRetryAfter is a fail-closed decision's retry after.
 */
public record Options(Duration timeout, FailureMode failure, Consumer<ErrorEvent> onError, Duration closedRetryAfter) {
    public Options {
        if (timeout == null) timeout = Duration.ZERO;
        if (failure == null) failure = FailureMode.ERROR;
        if (closedRetryAfter == null || closedRetryAfter.isZero() || closedRetryAfter.isNegative()) closedRetryAfter = Duration.ofSeconds(1);
    }

    public static Options defaults() { return new Options(null, null, null, null); }

    public Options withTimeout(Duration d) { return new Options(d, failure, onError, closedRetryAfter); }
    public Options withFailure(FailureMode m) { return new Options(timeout, m, onError, closedRetryAfter); }
    public Options withOnError(Consumer<ErrorEvent> f) { return new Options(timeout, failure, f, closedRetryAfter); }
    public Options withClosedRetryAfter(Duration d) { return new Options(timeout, failure, onError, d); }
}
