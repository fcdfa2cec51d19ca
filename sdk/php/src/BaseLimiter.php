<?php

declare(strict_types=1);

namespace Rlserver;

/** The parts every typed limiter shares: its command, parameters and CL.ALL rule name. */
abstract class BaseLimiter implements Limiter
{
    /** @internal */
    public readonly Spec $spec;

    /**
     * @param list<string> $params the positional parameters after the key
     */
    protected function __construct(
        protected readonly Client $client,
        /** @internal */ public readonly string $command,
        /** @internal */ public readonly string $rule,
        int $limit,
        int $windowMs,
        /** @internal */ public readonly array $params,
    ) {
        $this->spec = new Spec($rule . ' ' . implode(' ', $params), $limit, $windowMs);
    }

    /** The client this limiter sends through. */
    public function client(): Client
    {
        return $this->client;
    }

    public function window(): float
    {
        return $this->spec->windowMs / 1000;
    }

    /**
     * The algorithm: tokenbucket, throttle, leakybucket, fixed, sliding, log
     * or concurrency. The middleware puts it in its default key prefix, so
     * that limiters of different kinds never share a key.
     */
    public function kind(): string
    {
        return $this->rule === 'ACQUIRE' ? 'concurrency' : strtolower($this->rule);
    }

    /** This limiter on key, as a rule for Client::all(). */
    public function rule(string $key): Rule
    {
        return new Rule($this, $key);
    }

    /** @param list<string> $extra */
    protected function send(string $key, int $n, array $extra = []): Decision
    {
        $args = [$this->command, $key, ...$this->params, (string) $n, ...$extra];
        try {
            $v = $this->client->raw($key, $args);
        } catch (UnreachableException $e) {
            return $this->client->fail($this->command, $key, $e, $this->spec, $n);
        }
        return Decision::fromReply($v);
    }

    protected static function refillMs(int $limit, int $rate, int $periodMs): int
    {
        return $rate <= 0 ? $periodMs : (int) (($limit / $rate) * $periodMs);
    }
}
