<?php

declare(strict_types=1);

namespace Rlserver;

/**
 * Durations: a number is seconds (int or float), a string is the wire
 * contract's form (a whole number with an optional unit ms, s, m, h, d; a bare
 * integer is seconds), a DateInterval is taken as it is.
 */
final class Duration
{
    private const UNITS = ['ms' => 1, 's' => 1000, 'm' => 60_000, 'h' => 3_600_000, 'd' => 86_400_000];

    public static function toMs(int|float|string|\DateInterval $d): int
    {
        if ($d instanceof \DateInterval) {
            $ref = new \DateTimeImmutable('@0');
            $end = $ref->add($d);
            $ms = ($end->getTimestamp() - $ref->getTimestamp()) * 1000 + intdiv((int) $end->format('u'), 1000);
            return $ms;
        }
        if (is_string($d)) {
            if (preg_match('/^(\d+)(ms|s|m|h|d)?$/', $d, $m) !== 1) {
                throw new \InvalidArgumentException("rlserver: bad duration \"$d\"");
            }
            return (int) $m[1] * self::UNITS[($m[2] ?? '') ?: 's'];
        }
        $ms = (int) round($d * 1000);
        // A positive duration under a millisecond is one millisecond, never zero.
        return ($d > 0 && $ms === 0) ? 1 : $ms;
    }

    /** The contract's form of a duration: milliseconds. */
    public static function wire(int|float|string|\DateInterval $d): string
    {
        return self::toMs($d) . 'ms';
    }

    public static function interval(int $ms): \DateInterval
    {
        $i = new \DateInterval('PT' . intdiv($ms, 1000) . 'S');
        $i->f = ($ms % 1000) / 1000;
        return $i;
    }
}
