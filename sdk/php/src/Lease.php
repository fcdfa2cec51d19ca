<?php

declare(strict_types=1);

namespace Rlserver;

/**
 * A held concurrency permit. A lease granted by the failure policy (the
 * server unreachable) has an empty id: release and renew then touch only the
 * local fallback.
 */
final class Lease
{
    /** @internal */
    public function __construct(
        private readonly Client $client,
        private readonly Spec $spec,
        public readonly string $key,
        public readonly int $n,
        public readonly string $id,
        private readonly bool $local = false,
    ) {
    }

    /** A lease from its key and id (e.g. kept across requests). */
    public static function of(Client $c, string $key, string $id): self
    {
        return new self($c, new Spec('', 0, 0), $key, 0, $id);
    }

    /** CL.RELEASE: true if the lease was held, false if it had expired or was released. */
    public function release(): bool
    {
        if ($this->id === '') {
            if ($this->local) {
                $this->client->localStore()->release($this->spec, $this->key, $this->n);
            }
            return true;
        }
        return $this->client->raw($this->key, ['CL.RELEASE', $this->key, $this->id]) === 1;
    }

    /** CL.RENEW: extends the lease to expire after d from now; false if it had already expired. */
    public function renew(int|float|string|\DateInterval $d): bool
    {
        if ($this->id === '') {
            return true;
        }
        return $this->client->raw($this->key, ['CL.RENEW', $this->key, $this->id, Duration::wire($d)]) === 1;
    }

    /** @internal The lease id of a CL.ACQUIRE reply (its sixth element). */
    public static function idOf(mixed $v): string
    {
        return (is_array($v) && isset($v[5]) && is_string($v[5])) ? $v[5] : '';
    }
}
