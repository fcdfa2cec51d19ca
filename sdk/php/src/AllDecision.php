<?php

declare(strict_types=1);

namespace Rlserver;

/** The outcome of Client::all(): one decision per rule, in order. */
final class AllDecision
{
    /**
     * @param list<Decision> $decisions
     * @param list<?Lease> $leases the lease of each admitted ACQUIRE rule, null elsewhere
     */
    public function __construct(
        public readonly bool $allowed,
        public readonly array $decisions,
        public readonly array $leases,
    ) {
    }
}
