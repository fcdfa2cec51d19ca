<?php

declare(strict_types=1);

namespace Rlserver;

/** One limiter applied to one key, for Client::all(). */
final class Rule
{
    public function __construct(public readonly BaseLimiter $limiter, public readonly string $key)
    {
    }
}
