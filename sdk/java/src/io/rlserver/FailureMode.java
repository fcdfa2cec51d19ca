package io.rlserver;

/** What a limiter answers while the server is unreachable. */
public enum FailureMode {
    /** Throw the error to the caller. */
    ERROR,
    /** Admit the request (Decision.fallback is set). */
    OPEN,
    /** Deny with retryAfter = Options.closedRetryAfter. */
    CLOSED,
    /** Decide with an in-process limiter of the same limit and window, per key. */
    LOCAL
}
