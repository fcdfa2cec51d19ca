<?php

declare(strict_types=1);

namespace Rlserver;

/** @internal A limiter's identity for the local fallback: its parameters, limit and window. */
final class Spec
{
    public function __construct(
        public readonly string $id,
        public readonly int $limit,
        public readonly int $windowMs, // time to go from empty to full
    ) {
    }
}
