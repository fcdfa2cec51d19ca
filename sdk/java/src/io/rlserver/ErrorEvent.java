package io.rlserver;

/** A call the failure policy answered: the command, the key, the error, and the mode that answered. */
public record ErrorEvent(String command, String key, Exception error, FailureMode mode) { }
