<?php

declare(strict_types=1);

namespace Rlserver;

/**
 * @internal The fallback of FailureMode::Local when APCu is enabled: its state
 * lives in APCu's shared memory, so every request of a php-fpm pool (or of
 * php -S) counts against the same limit, where LocalStore's would last one
 * request. Each limiter and key gets a fixed window of the limiter's limit
 * per its window, counted with apcu_inc (atomic across workers); leases
 * are a shared counter. Per machine, not per cluster of machines.
 */
final class ApcuStore
{
    private const PREFIX = 'rlserver:';
    /** @var \Closure(): float */
    private \Closure $now;

    public function __construct(?callable $now = null)
    {
        $this->now = $now === null ? static fn (): float => microtime(true) : \Closure::fromCallable($now);
    }

    /** Whether APCu can hold the state here (installed, and enabled for this SAPI). */
    public static function available(): bool
    {
        return function_exists('apcu_enabled') && apcu_enabled();
    }

    public function take(Spec $s, string $key, int $n, bool $peek): Decision
    {
        $nowMs = (int) floor(($this->now)() * 1000);
        $win = max(1, $s->windowMs);
        $end = (intdiv($nowMs, $win) + 1) * $win;
        $left = $end - $nowMs;
        $k = self::PREFIX . $s->id . "\0" . $key . "\0" . intdiv($nowMs, $win);
        apcu_add($k, 0, intdiv($win, 1000) + 1);
        if ($n > $s->limit) {
            $count = (int) apcu_fetch($k);
            return new Decision(false, $s->limit, max(0, $s->limit - $count), -1, $count > 0 ? $left : 0, true);
        }
        if ($peek || $n === 0) {
            $count = (int) apcu_fetch($k);
            $allowed = $count + $n <= $s->limit;
        } else {
            $count = apcu_inc($k, $n, $ok);
            if ($count === false) {
                // Evicted between add and inc: start the window again.
                apcu_store($k, $n, intdiv($win, 1000) + 1);
                $count = $n;
            }
            $allowed = $count <= $s->limit;
            if (!$allowed) {
                $count = (int) apcu_dec($k, $n);
            }
        }
        return new Decision($allowed, $s->limit, max(0, $s->limit - $count), $allowed ? 0 : $left, $count > 0 ? $left : 0, true);
    }

    public function acquire(Spec $s, string $key, int $n): bool
    {
        $k = self::PREFIX . 'held:' . $s->id . "\0" . $key;
        // Held units expire with the lease time, as the server's leases do.
        apcu_add($k, 0, intdiv($s->windowMs, 1000) + 1);
        $held = apcu_inc($k, $n);
        if ($held === false) {
            return false;
        }
        if ($held > $s->limit) {
            apcu_dec($k, $n);
            return false;
        }
        return true;
    }

    public function release(Spec $s, string $key, int $n): void
    {
        $k = self::PREFIX . 'held:' . $s->id . "\0" . $key;
        if (apcu_dec($k, $n) < 0) {
            apcu_store($k, 0, intdiv($s->windowMs, 1000) + 1);
        }
    }
}
