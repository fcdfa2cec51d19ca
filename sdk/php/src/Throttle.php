<?php

declare(strict_types=1);

namespace Rlserver;

/**
 * GCRA (CL.THROTTLE's parameters: max_burst, count per period), decided with
 * millisecond precision through a one-rule CL.ALL.
 */
final class Throttle extends BaseLimiter
{
    public function __construct(Client $c, int $maxBurst, int $count, int|float|string|\DateInterval $period)
    {
        $p = Duration::toMs($period);
        parent::__construct($c, 'CL.THROTTLE', 'THROTTLE', $maxBurst + 1, self::refillMs($maxBurst + 1, $count, $p),
            [(string) $maxBurst, (string) $count, $p . 'ms']);
    }

    public function allow(string $key, int $n = 1): Decision
    {
        return $this->client->all($n, $this->rule($key))->decisions[0];
    }

    public function decide(string $key, int $n = 1): Decision
    {
        return $this->allow($key, $n);
    }
}
