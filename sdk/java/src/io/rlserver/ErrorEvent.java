package io.rlserver;

/**
 * A call that failed for a reason other than the caller's own: the server
 * was unreachable (the failure policy answered, mode says how), or the
 * set-up is wrong (config: a wrong or missing password, NOPERM, WRONGTYPE,
 * an unknown command), which is thrown whatever the policy and has mode ERROR.
 */
public record ErrorEvent(String command, String key, Exception error, FailureMode mode, boolean config) {
    public ErrorEvent(String command, String key, Exception error, FailureMode mode) { this(command, key, error, mode, false); }
}
