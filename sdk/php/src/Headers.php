<?php

declare(strict_types=1);

namespace Rlserver;

/**
 * The HTTP fields for a decision: IETF RateLimit and RateLimit-Policy
 * (draft-ietf-httpapi-ratelimit-headers-11), Retry-After when denied, and
 * optionally X-RateLimit-*. Seconds always round up.
 */
final class Headers
{
    /** @return array<string, string> */
    public static function for(string $policy, float $windowSeconds, Decision $d, bool $xRateLimit = false): array
    {
        $name = '"' . addcslashes($policy, '"\\') . '"';
        $reset = (string) self::ceilMs($d->resetAfterMs);
        $windowMs = (int) round($windowSeconds * 1000);
        $h = [
            'RateLimit-Policy' => $name . ';q=' . $d->limit . ';w=' . max(1, self::ceilMs($windowMs)),
            'RateLimit' => $name . ';r=' . $d->remaining . ';t=' . $reset,
        ];
        if (!$d->allowed && $d->retryAfterMs >= 0) {
            $h['Retry-After'] = (string) max(1, self::ceilMs($d->retryAfterMs));
        }
        if ($xRateLimit) {
            $h['X-RateLimit-Limit'] = (string) $d->limit;
            $h['X-RateLimit-Remaining'] = (string) $d->remaining;
            $h['X-RateLimit-Reset'] = $reset;
        }
        return $h;
    }

    private static function ceilMs(int $ms): int
    {
        return $ms <= 0 ? 0 : intdiv($ms + 999, 1000);
    }
}
