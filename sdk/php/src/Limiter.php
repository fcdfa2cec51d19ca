<?php

declare(strict_types=1);

namespace Rlserver;

/** What the middleware needs of a limiter. */
interface Limiter
{
    /** Decides n units for key (for a Concurrency limiter: acquires and keeps the lease). */
    public function decide(string $key, int $n = 1): Decision;

    /** Seconds to go from empty to the full limit (RateLimit-Policy's w). */
    public function window(): float;
}
