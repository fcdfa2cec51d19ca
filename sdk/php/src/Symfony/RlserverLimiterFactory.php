<?php

declare(strict_types=1);

namespace Rlserver\Symfony;

use Rlserver\BaseLimiter;
use Rlserver\Client;
use Rlserver\WindowMode;
use Symfony\Component\RateLimiter\LimiterInterface;
use Symfony\Component\RateLimiter\Policy\NoLimiter;

/**
 * The counterpart of Symfony's RateLimiterFactory (final there, so not a
 * subclass): the same configuration array, create($key) giving a
 * LimiterInterface whose state lives in rlserver.
 *
 *   ['id' => 'api', 'policy' => 'token_bucket', 'limit' => 10, 'rate' => ['interval' => '1 minute', 'amount' => 5]]
 *   ['id' => 'api', 'policy' => 'fixed_window' | 'sliding_window', 'limit' => 100, 'interval' => '1 hour']
 *   ['id' => 'api', 'policy' => 'no_limit']
 *
 * Keys are "<id>-<key>", as Symfony's.
 */
final class RlserverLimiterFactory
{
    private ?BaseLimiter $limiter = null;

    /** @param array{id: string, policy: string, limit?: int, interval?: string, rate?: array{interval: string, amount?: int}} $config */
    public function __construct(private readonly array $config, Client $client)
    {
        foreach (['id', 'policy'] as $k) {
            if (!isset($config[$k])) {
                throw new \InvalidArgumentException("rlserver: limiter config needs \"$k\"");
            }
        }
        $this->limiter = match ($config['policy']) {
            'token_bucket' => $client->tokenBucket(self::int($config, 'limit'), (int) ($config['rate']['amount'] ?? 1), self::interval($config['rate']['interval'] ?? null)),
            'fixed_window' => $client->window(WindowMode::Fixed, self::int($config, 'limit'), self::interval($config['interval'] ?? null)),
            'sliding_window' => $client->window(WindowMode::Sliding, self::int($config, 'limit'), self::interval($config['interval'] ?? null)),
            'no_limit' => null,
            default => throw new \LogicException(sprintf('Limiter policy "%s" does not exists, it must be either "token_bucket", "sliding_window", "fixed_window" or "no_limit".', $config['policy'])),
        };
    }

    public function create(?string $key = null): LimiterInterface
    {
        if ($this->limiter === null) {
            return new NoLimiter();
        }
        return new RlserverLimiter($this->limiter, $this->config['id'] . '-' . $key);
    }

    /** The rlserver limiter behind this factory (null for no_limit), e.g. for the middleware. */
    public function limiter(): ?BaseLimiter
    {
        return $this->limiter;
    }

    private static function int(array $config, string $k): int
    {
        if (!isset($config[$k]) || !is_int($config[$k])) {
            throw new \InvalidArgumentException("rlserver: limiter config needs an integer \"$k\"");
        }
        return $config[$k];
    }

    /** Symfony's interval strings ("1 minute", "15 seconds"), as a DateInterval from now. */
    private static function interval(?string $interval): \DateInterval
    {
        if ($interval === null) {
            throw new \InvalidArgumentException('rlserver: limiter config needs an interval');
        }
        $now = \DateTimeImmutable::createFromFormat('U', (string) time());
        $later = @$now->modify('+' . $interval);
        if ($later === false) {
            throw new \LogicException(sprintf('Cannot parse interval "%s".', $interval));
        }
        return $now->diff($later);
    }
}
