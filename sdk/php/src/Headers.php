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
        $name = self::sfString($policy);
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

    /**
     * $s as an RFC 8941 sf-string: "..." holding printable ASCII only (0x20 -
     * 0x7E), with " and \ escaped. Anything else cannot be one: refused.
     *
     * @throws \InvalidArgumentException
     */
    public static function sfString(string $s): string
    {
        if (preg_match('/[^\x20-\x7e]/', $s, $m, PREG_OFFSET_CAPTURE) === 1) {
            throw new \InvalidArgumentException(sprintf('rlserver: policy name "%s": an RFC 8941 string holds printable ASCII only (byte 0x%02x at %d)',
                addcslashes($s, "\0..\37\177..\377"), ord($m[0][0]), $m[0][1]));
        }
        return '"' . addcslashes($s, '"\\') . '"';
    }

    private static function ceilMs(int $ms): int
    {
        return $ms <= 0 ? 0 : intdiv($ms + 999, 1000);
    }
}
