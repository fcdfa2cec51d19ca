<?php

declare(strict_types=1);

namespace Rlserver\Symfony;

use Rlserver\BaseLimiter;
use Rlserver\Decision;
use Rlserver\TokenBucket;
use Rlserver\WindowLimiter;
use Rlserver\WindowMode;
use Symfony\Component\RateLimiter\Exception\MaxWaitDurationExceededException;
use Symfony\Component\RateLimiter\Exception\ReserveNotSupportedException;
use Symfony\Component\RateLimiter\LimiterInterface;
use Symfony\Component\RateLimiter\RateLimit;
use Symfony\Component\RateLimiter\Reservation;

/**
 * Symfony RateLimiter's LimiterInterface over an rlserver limiter and one key,
 * so code written against Symfony's limiters (consume(), reserve(),
 * RateLimit::ensureAccepted(), wait()) runs unchanged with rlserver deciding.
 * Needs symfony/rate-limiter (Debian: php-symfony-rate-limiter).
 */
final class RlserverLimiter implements LimiterInterface
{
    /** max_wait of a reserve() without a maxTime: Symfony's "no limit". */
    private const NO_MAX_WAIT = '3650d';

    public function __construct(private readonly BaseLimiter $limiter, private readonly string $key)
    {
    }

    public function consume(int $tokens = 1): RateLimit
    {
        return self::rateLimit($this->checked($tokens, fn () => $this->limiter->decide($this->key, $tokens)));
    }

    /**
     * Token buckets (CL.TOKENBUCKET ... RESERVE): admitted now, in debt, to
     * act at the reservation's time. Fixed windows, as Symfony's: admitted
     * now when the window has room, else a reservation at the window's end
     * that holds no place in the next window. Sliding windows: not supported,
     * as in Symfony. Beyond maxTime: MaxWaitDurationExceededException.
     */
    public function reserve(int $tokens = 1, ?float $maxTime = null): Reservation
    {
        if ($this->limiter instanceof TokenBucket) {
            $maxWait = $maxTime === null ? self::NO_MAX_WAIT : max(0.001, $maxTime);
            $d = $this->checked($tokens, fn () => $this->limiter->reserve($this->key, $tokens, $maxWait));
        } elseif ($this->limiter instanceof WindowLimiter && $this->limiter->mode === WindowMode::Fixed) {
            $d = $this->checked($tokens, fn () => $this->limiter->decide($this->key, $tokens));
            if (!$d->allowed && ($maxTime === null || $d->retryAfter <= $maxTime)) {
                return new Reservation(microtime(true) + $d->retryAfter, self::rateLimit($d));
            }
        } else {
            throw new ReserveNotSupportedException($this->limiter::class);
        }
        $rl = self::rateLimit($d);
        if (!$d->allowed) {
            throw new MaxWaitDurationExceededException(sprintf('The rate limiter wait time ("%.3f" seconds) is longer than the provided maximum time ("%.3f" seconds).', $d->retryAfter, (float) $maxTime), $rl);
        }
        return new Reservation(microtime(true) + $d->retryAfter, $rl);
    }

    /** Forgets the key's state on the server (DEL). */
    public function reset(): void
    {
        $this->limiter->client()->raw($this->key, ['DEL', $this->key]);
    }

    /** @param \Closure(): Decision $fn */
    private function checked(int $tokens, \Closure $fn): Decision
    {
        $d = $fn();
        if ($d->never()) {
            throw new \InvalidArgumentException(sprintf('Cannot reserve more tokens (%d) than the burst size of the rate limiter (%d).', $tokens, $d->limit));
        }
        return $d;
    }

    /** Symfony's RateLimit of a decision: retry after now, or now plus the wait when denied. */
    public static function rateLimit(Decision $d): RateLimit
    {
        $at = microtime(true) + ($d->allowed ? 0.0 : $d->retryAfter);
        $retryAfter = \DateTimeImmutable::createFromFormat('U.u', sprintf('%.6F', $at));
        return new RateLimit($d->remaining, $retryAfter, $d->allowed, $d->limit);
    }
}
