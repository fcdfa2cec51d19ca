package io.rlserver;

import java.util.List;

/**
 * CL.ALL's answer: allowed only if every rule admitted (then every rule
 * consumed, otherwise none did), each rule's decision, and for each
 * Concurrency rule that admitted its lease (null otherwise).
 */
public record AllDecision(boolean allowed, List<Decision> decisions, List<Lease> leases) { }
