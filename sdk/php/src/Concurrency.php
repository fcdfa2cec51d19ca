<?php

declare(strict_types=1);

namespace Rlserver;

/** CL.ACQUIRE: at most limit units held at once, each lease expiring after its lease time unless renewed. */
final class Concurrency extends BaseLimiter
{
    public function __construct(Client $c, int $limit, int|float|string|\DateInterval $lease)
    {
        $l = Duration::toMs($lease);
        parent::__construct($c, 'CL.ACQUIRE', 'ACQUIRE', $limit, $l, [(string) $limit, $l . 'ms']);
    }

    public function acquire(string $key, int $n = 1): AcquireResult
    {
        try {
            $v = $this->client->raw($key, ['CL.ACQUIRE', $key, ...$this->params, (string) $n]);
        } catch (UnreachableException $e) {
            $this->client->policy('CL.ACQUIRE', $key, $e);
            $mode = $this->client->options()->failure;
            $local = $mode === FailureMode::Local && $this->client->localStore()->acquire($this->spec, $key, $n);
            if ($mode !== FailureMode::Open && !$local) {
                return new AcquireResult(null, $this->client->closedDecision($this->spec));
            }
            return new AcquireResult(new Lease($this->client, $this->spec, $key, $n, '', $local),
                new Decision(true, $this->spec->limit, 0, 0, 0, true));
        }
        $d = Decision::fromReply($v);
        if (!$d->allowed) {
            return new AcquireResult(null, $d);
        }
        return new AcquireResult(new Lease($this->client, $this->spec, $key, $n, Lease::idOf($v)), $d);
    }

    /** Acquires and keeps the lease (it expires after the lease time); prefer acquire() or run(). */
    public function decide(string $key, int $n = 1): Decision
    {
        return $this->acquire($key, $n)->decision;
    }

    /**
     * The scoped form: acquires, runs fn, and releases in finally whatever fn
     * does. Raises LimitedException (with the decision) when denied.
     *
     * @template T
     * @param callable(Lease): T $fn
     * @return T
     */
    public function run(string $key, callable $fn, int $n = 1): mixed
    {
        $r = $this->acquire($key, $n);
        if ($r->lease === null) {
            throw new LimitedException($r->decision);
        }
        try {
            return $fn($r->lease);
        } finally {
            try {
                $r->lease->release();
            } catch (RlserverException) {
                // The lease expires on its own.
            }
        }
    }
}
