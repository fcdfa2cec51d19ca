<?php

declare(strict_types=1);

namespace Rlserver;

/**
 * The server's five-integer decision reply, typed. Durations are seconds
 * (float, millisecond precision); the *Ms properties are the exact integers.
 */
final class Decision
{
    /** retryAfter of a request that can never be admitted (its cost exceeds the limit). */
    public const NEVER = -1.0;

    /** Seconds to wait: denied, before retrying (NEVER: cannot succeed); admitted, before acting (reservations, leaky bucket). */
    public readonly float $retryAfter;
    /** Seconds until the key is back to its fresh state. */
    public readonly float $resetAfter;

    public function __construct(
        public readonly bool $allowed,
        public readonly int $limit,
        public readonly int $remaining,
        public readonly int $retryAfterMs,
        public readonly int $resetAfterMs,
        /** True when the failure policy decided because the server could not be reached. */
        public readonly bool $fallback = false,
    ) {
        $this->retryAfter = $retryAfterMs < 0 ? self::NEVER : $retryAfterMs / 1000;
        $this->resetAfter = max(0, $resetAfterMs) / 1000;
    }

    public function never(): bool
    {
        return $this->retryAfterMs < 0;
    }

    /** retryAfter as a DateInterval (null for never). */
    public function retryAfterInterval(): ?\DateInterval
    {
        return $this->retryAfterMs < 0 ? null : Duration::interval($this->retryAfterMs);
    }

    public function resetAfterInterval(): \DateInterval
    {
        return Duration::interval(max(0, $this->resetAfterMs));
    }

    /** Reads the first five integers of a decision array. */
    public static function fromReply(mixed $v): self
    {
        if (!is_array($v) || count($v) < 5) {
            throw new BadReplyException('rlserver: unexpected reply: ' . json_encode($v));
        }
        $f = [];
        for ($i = 0; $i < 5; $i++) {
            if (!is_int($v[$i])) {
                throw new BadReplyException('rlserver: unexpected reply: ' . json_encode($v));
            }
            $f[] = $v[$i];
        }
        return new self($f[0] === 1, $f[1], $f[2], $f[3], $f[4]);
    }
}
