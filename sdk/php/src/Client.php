<?php

declare(strict_types=1);

namespace Rlserver;

/**
 * The entry point: wraps a phpredis \Redis or \RedisCluster (commands go
 * through rawCommand, so standalone and cluster work the same) and makes the
 * typed limiters. Client::connect() connects on first use, so that a server
 * down when the process starts meets the failure policy.
 */
final class Client
{
    private LocalStore|ApcuStore $local;
    /** Connects $redis (lazily, see connect()); null once connected or when given connected. */
    private ?\Closure $connector = null;
    private bool $timeoutSet = false;

    /**
     * @param \Redis|\RedisCluster $redis a connection; one that is not connected (its
     *     connect() failed) is not an error here: each call then fails as unreachable
     */
    public function __construct(private readonly \Redis|\RedisCluster $redis, private Options $opts = new Options())
    {
        $this->local = ApcuStore::available() ? new ApcuStore() : new LocalStore();
        $this->applyTimeout();
    }

    /**
     * A client of a standalone server that connects on its first call, within
     * Options::$timeout (when set): a server that is down or unreachable then
     * meets the failure policy, from the first request on, rather than an
     * exception. password (and user, for an ACL user) authenticate; a wrong or
     * missing one is a configuration error (see check()).
     */
    public static function connect(string $host, int $port = 6379, Options $opts = new Options(), ?string $password = null, ?string $user = null): self
    {
        $redis = new \Redis();
        $c = new self($redis, $opts);
        $c->connector = static function () use ($redis, $host, $port, $opts, $password, $user): void {
            $redis->connect($host, $port, $opts->timeout > 0 ? $opts->timeout : 0.0);
            if ($password !== null) {
                $redis->auth($user !== null ? [$user, $password] : $password);
            }
        };
        return $c;
    }

    /** A client on the same connection and local fallback state with other options. */
    public function withOptions(Options $opts): self
    {
        $c = new self($this->redis, $opts);
        $c->local = $this->local;
        $c->connector = $this->connector;
        return $c;
    }

    /**
     * Sends PING, so that a wrong or missing password (or an unreachable
     * server) is found at start: call it once after making the client. A
     * configuration error is logged and passed to onError; every error raises.
     */
    public function check(): void
    {
        $this->raw('', ['PING']);
    }

    /** Sets the read timeout, once the connection exists (setOption throws on one that does not). */
    private function applyTimeout(): void
    {
        if ($this->timeoutSet || $this->opts->timeout <= 0) {
            return;
        }
        try {
            $this->redis->setOption(\Redis::OPT_READ_TIMEOUT, $this->opts->timeout);
            $this->timeoutSet = true;
        } catch (\RedisException|\RedisClusterException) {
            // Not connected: retried before the next command.
        }
    }

    public function redis(): \Redis|\RedisCluster
    {
        return $this->redis;
    }

    public function options(): Options
    {
        return $this->opts;
    }

    /** @internal */
    public function localStore(): LocalStore|ApcuStore
    {
        return $this->local;
    }

    /** @internal Replaces the local fallback's state (tests give it a clock). */
    public function setLocalStore(LocalStore|ApcuStore $local): void
    {
        $this->local = $local;
    }

    public function tokenBucket(int $capacity, int $rate, int|float|string|\DateInterval $period): TokenBucket
    {
        return new TokenBucket($this, $capacity, $rate, $period);
    }

    public function throttle(int $maxBurst, int $count, int|float|string|\DateInterval $period): Throttle
    {
        return new Throttle($this, $maxBurst, $count, $period);
    }

    public function leakyBucket(int $capacity, int $rate, int|float|string|\DateInterval $period): LeakyBucket
    {
        return new LeakyBucket($this, $capacity, $rate, $period);
    }

    public function window(WindowMode $mode, int $limit, int|float|string|\DateInterval $window): WindowLimiter
    {
        return new WindowLimiter($this, $mode, $limit, $window);
    }

    public function concurrency(int $limit, int|float|string|\DateInterval $lease): Concurrency
    {
        return new Concurrency($this, $limit, $lease);
    }

    /**
     * CL.ALL: every rule admits or none is charged, atomically (the rules' keys
     * must share a hash slot on a cluster).
     */
    public function all(int $cost, Rule ...$rules): AllDecision
    {
        if ($rules === []) {
            throw new \InvalidArgumentException('rlserver: all() needs at least one rule');
        }
        $args = ['CL.ALL', (string) count($rules)];
        foreach ($rules as $r) {
            array_push($args, $r->limiter->rule, $r->key, ...$r->limiter->params);
        }
        array_push($args, 'COST', (string) $cost);
        try {
            $v = $this->raw($rules[0]->key, $args);
        } catch (UnreachableException $e) {
            return $this->allFallback($e, $cost, $rules);
        }
        if (!is_array($v) || count($v) !== count($rules) + 1) {
            throw new BadReplyException('rlserver: unexpected reply: ' . json_encode($v));
        }
        $decisions = [];
        $leases = [];
        foreach ($rules as $i => $r) {
            $d = Decision::fromReply($v[$i + 1]);
            $decisions[] = $d;
            $leases[] = ($r->limiter->rule === 'ACQUIRE' && $d->allowed)
                ? new Lease($this, $r->limiter->spec, $r->key, $cost, Lease::idOf($v[$i + 1]))
                : null;
        }
        return new AllDecision($v[0] === 1, $decisions, $leases);
    }

    /** @param list<Rule> $rules */
    private function allFallback(UnreachableException $e, int $cost, array $rules): AllDecision
    {
        $this->policy('CL.ALL', $rules[0]->key, $e);
        $mode = $this->opts->failure;
        $allowed = true;
        $ds = [];
        foreach ($rules as $r) {
            $d = match ($mode) {
                FailureMode::Open => $this->openDecision($r->limiter->spec),
                FailureMode::Closed => $this->closedDecision($r->limiter->spec),
                default => $this->local->take($r->limiter->spec, $r->key, $cost, true),
            };
            $ds[] = $d;
            $allowed = $allowed && $d->allowed;
        }
        if ($allowed && $mode === FailureMode::Local) {
            foreach ($rules as $i => $r) {
                $ds[$i] = $this->local->take($r->limiter->spec, $r->key, $cost, false);
            }
        }
        $leases = [];
        foreach ($rules as $r) {
            $leases[] = ($allowed && $r->limiter->rule === 'ACQUIRE') ? new Lease($this, $r->limiter->spec, $r->key, $cost, '', false) : null;
        }
        return new AllDecision($allowed, $ds, $leases);
    }

    /**
     * Sends one command. Error replies raise ServerException; a server that
     * cannot be reached (or answers LOADING, CLUSTERDOWN, TRYAGAIN, MASTERDOWN)
     * raises UnreachableException.
     *
     * @internal
     * @param list<string> $args
     */
    public function raw(string $key, array $args): mixed
    {
        try {
            if ($this->connector !== null) {
                ($this->connector)();
                $this->connector = null;
            }
            $this->applyTimeout();
            if ($this->redis instanceof \RedisCluster) {
                $this->redis->clearLastError();
                $v = $this->redis->rawCommand($key, ...$args);
            } else {
                $this->redis->clearLastError();
                $v = $this->redis->rawCommand(...$args);
            }
        } catch (\RedisException|\RedisClusterException $e) {
            // phpredis raises authentication errors (WRONGPASS, NOAUTH) as
            // exceptions, like a lost connection: tell them apart.
            if (self::misconfigured($e->getMessage())) {
                $se = new ServerException($e->getMessage(), 0, $e);
                $this->report(new ErrorEvent($args[0], $key, $se, FailureMode::Error, true));
                throw $se;
            }
            throw new UnreachableException('rlserver: ' . $e->getMessage(), 0, $e);
        }
        if ($v === false) {
            $err = $this->redis->getLastError();
            if ($err !== null && $err !== '') {
                foreach (['LOADING', 'CLUSTERDOWN', 'TRYAGAIN', 'MASTERDOWN'] as $p) {
                    if (str_starts_with($err, $p)) {
                        throw new UnreachableException($err);
                    }
                }
                $e = new ServerException($err);
                if (self::misconfigured($err)) {
                    $this->report(new ErrorEvent($args[0], $key, $e, FailureMode::Error, true));
                }
                throw $e;
            }
        }
        return $v;
    }

    /**
     * Whether an error says the set-up is wrong (a wrong or missing password,
     * no permission, a key holding another limiter's state, a server without
     * the command): reported loudly, never answered by the failure policy.
     */
    private static function misconfigured(string $err): bool
    {
        foreach (['WRONGTYPE', 'WRONGPASS', 'NOAUTH', 'NOPERM', 'ERR unknown command', 'ERR AUTH', 'ERR invalid password'] as $p) {
            if (str_starts_with($err, $p)) {
                return true;
            }
        }
        return false;
    }

    /** Passes e to onError and, for a configuration error, logs it. */
    private function report(ErrorEvent $e): void
    {
        if ($e->config) {
            ($this->opts->log)(sprintf('rlserver: configuration error on %s "%s": %s', $e->command, $e->key, $e->error->getMessage()));
        }
        if ($this->opts->onError !== null) {
            ($this->opts->onError)($e);
        }
    }

    /**
     * Applies the failure policy to an unreachable server: rethrows with
     * FailureMode::Error, else calls onError and returns.
     *
     * @internal
     */
    public function policy(string $cmd, string $key, UnreachableException $e): void
    {
        if ($this->opts->failure === FailureMode::Error) {
            throw $e;
        }
        $this->report(new ErrorEvent($cmd, $key, $e, $this->opts->failure));
    }

    /** @internal */
    public function fail(string $cmd, string $key, UnreachableException $e, Spec $s, int $n): Decision
    {
        $this->policy($cmd, $key, $e);
        return match ($this->opts->failure) {
            FailureMode::Open => $this->openDecision($s),
            FailureMode::Closed => $this->closedDecision($s),
            default => $this->local->take($s, $key, $n, false),
        };
    }

    /** @internal */
    public function openDecision(Spec $s): Decision
    {
        return new Decision(true, $s->limit, $s->limit, 0, 0, true);
    }

    /** @internal */
    public function closedDecision(Spec $s): Decision
    {
        $r = Duration::toMs($this->opts->closedRetryAfter);
        return new Decision(false, $s->limit, 0, $r, $r, true);
    }
}
