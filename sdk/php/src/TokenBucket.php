<?php

declare(strict_types=1);

namespace Rlserver;

/** CL.TOKENBUCKET: capacity tokens, refilled at rate per period. */
final class TokenBucket extends BaseLimiter
{
    public function __construct(Client $c, int $capacity, int $rate, int|float|string|\DateInterval $period)
    {
        $p = Duration::toMs($period);
        parent::__construct($c, 'CL.TOKENBUCKET', 'TOKENBUCKET', $capacity, self::refillMs($capacity, $rate, $p),
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

    /**
     * Admits n if they could be served within maxWait, taking them now (the
     * bucket goes into debt); wait the decision's retryAfter before acting.
     */
    public function reserve(string $key, int $n, int|float|string|\DateInterval $maxWait): Decision
    {
        return $this->send($key, $n, ['RESERVE', Duration::wire($maxWait)]);
    }

    /**
     * Waits until n tokens are granted (Go's rate.Limiter.Wait): reserves
     * within maxWait, sleeps the decision's retryAfter, returns the decision.
     * Raises LimitedException when they cannot be had within maxWait (or
     * ever: n above the capacity).
     */
    public function wait(string $key, int $n = 1, int|float|string|\DateInterval $maxWait = '365d'): Decision
    {
        $d = $this->reserve($key, $n, $maxWait);
        if (!$d->allowed) {
            throw new LimitedException($d);
        }
        if ($d->retryAfterMs > 0) {
            usleep($d->retryAfterMs * 1000);
        }
        return $d;
    }
}
