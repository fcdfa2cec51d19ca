<?php

declare(strict_types=1);

namespace Rlserver;

/** Concurrency::acquire's outcome: the lease (null when denied) and the decision. */
final class AcquireResult
{
    public function __construct(public readonly ?Lease $lease, public readonly Decision $decision)
    {
    }
}
