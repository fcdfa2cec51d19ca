<?php

declare(strict_types=1);

namespace Rlserver;

/** CL.WINDOW: limit per window, FIXED, SLIDING or LOG. */
final class WindowLimiter extends BaseLimiter
{
    public function __construct(Client $c, public readonly WindowMode $mode, int $limit, int|float|string|\DateInterval $window)
    {
        $w = Duration::toMs($window);
        parent::__construct($c, 'CL.WINDOW', $mode->value, $limit, $w, [(string) $limit, $w . 'ms']);
    }

    public function allow(string $key, int $n = 1): Decision
    {
        return $this->send($key, $n, [$this->mode->value]);
    }

    public function decide(string $key, int $n = 1): Decision
    {
        return $this->send($key, $n, [$this->mode->value]);
    }
}
