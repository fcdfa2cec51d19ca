<?php

declare(strict_types=1);

namespace Rlserver;

/** CL.LEAKYBUCKET: a queue of capacity draining at rate per period; an admitted retryAfter is the delay before acting. */
final class LeakyBucket extends BaseLimiter
{
    public function __construct(Client $c, int $capacity, int $rate, int|float|string|\DateInterval $period)
    {
        $p = Duration::toMs($period);
        parent::__construct($c, 'CL.LEAKYBUCKET', 'LEAKYBUCKET', $capacity, self::refillMs($capacity, $rate, $p),
            [(string) $capacity, (string) $rate, $p . 'ms']);
    }

    public function allow(string $key, int $n = 1): Decision
    {
        return $this->send($key, $n);
    }

    public function decide(string $key, int $n = 1): Decision
    {
        return $this->send($key, $n);
    }
}
