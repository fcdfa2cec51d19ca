<?php

declare(strict_types=1);

namespace Rlserver;

/**
 * @internal The in-process fallback of FailureMode::Local: a token bucket per
 * limiter and key with the limiter's limit and window, and a count of held
 * concurrency units. It lives as long as the Client (one PHP request under
 * php-fpm, the worker under a long-running server).
 */
final class LocalStore
{
    private const MAX_KEYS = 100_000;

    /** @var array<string, array{float, float}> tokens and when (seconds) */
    private array $buckets = [];
    /** @var array<string, int> */
    private array $held = [];
    /** @var \Closure(): float */
    private \Closure $now;

    public function __construct(?callable $now = null)
    {
        $this->now = $now === null ? static fn (): float => microtime(true) : \Closure::fromCallable($now);
    }

    public function take(Spec $s, string $key, int $n, bool $peek): Decision
    {
        $now = ($this->now)();
        $id = $s->id . "\0" . $key;
        if (!isset($this->buckets[$id])) {
            if (count($this->buckets) >= self::MAX_KEYS) {
                $this->prune($s, $now);
            }
            $this->buckets[$id] = [(float) $s->limit, $now];
        }
        [$tokens, $at] = $this->buckets[$id];
        $perUnitMs = $s->windowMs / max(1, $s->limit);
        $el = ($now - $at) * 1000;
        if ($el > 0 && $perUnitMs > 0) {
            $tokens = min((float) $s->limit, $tokens + $el / $perUnitMs);
        }
        $allowed = false;
        $retry = 0;
        if ($n > $s->limit) {
            $retry = -1;
        } elseif ($tokens >= $n) {
            $allowed = true;
            if (!$peek) {
                $tokens -= $n;
            }
        } else {
            $retry = (int) (($n - $tokens) * $perUnitMs);
        }
        $this->buckets[$id] = [$tokens, $now];
        return new Decision($allowed, $s->limit, (int) $tokens, $retry, (int) (($s->limit - $tokens) * $perUnitMs), true);
    }

    private function prune(Spec $s, float $now): void
    {
        foreach ($this->buckets as $id => [, $at]) {
            if (($now - $at) * 1000 >= $s->windowMs) {
                unset($this->buckets[$id]);
            }
        }
    }

    public function acquire(Spec $s, string $key, int $n): bool
    {
        $id = $s->id . "\0" . $key;
        if (($this->held[$id] ?? 0) + $n > $s->limit) {
            return false;
        }
        $this->held[$id] = ($this->held[$id] ?? 0) + $n;
        return true;
    }

    public function release(Spec $s, string $key, int $n): void
    {
        $id = $s->id . "\0" . $key;
        $this->held[$id] = ($this->held[$id] ?? 0) - $n;
        if ($this->held[$id] <= 0) {
            unset($this->held[$id]);
        }
    }
}
