package io.rlserver;

/** One limiter applied to one key, for Client.all. */
public record Rule(Limiter limiter, String key) { }
