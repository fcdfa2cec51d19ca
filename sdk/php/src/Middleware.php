<?php

declare(strict_types=1);

namespace Rlserver;

/**
 * Framework-neutral HTTP middleware, for plain PHP and frameworks without
 * PSR-15 (Psr15Middleware maps it onto PSR-7 messages).
 *
 * handle() derives the key from the request, decides, emits the RateLimit
 * fields through $emit (default: PHP's header()), and either calls $next or,
 * when denied, $denied (default: status 429 and a short body). With a
 * Concurrency limiter the lease is held for the request only.
 */
final class Middleware
{
    private \Closure $key;
    private ?\Closure $cost;
    private \Closure $denied;
    private \Closure $error;
    private string $keyPrefix;

    /**
     * @param callable(mixed): ?string $key the limited key of a request (null or "": not limited);
     *     default: $_SERVER['REMOTE_ADDR']
     * @param null|callable(mixed): int $cost units a request takes (default 1)
     * @param null|callable(mixed, Decision): mixed $denied the response when denied (default: 429)
     * @param null|callable(mixed, \Throwable): mixed $error the response when the limiter fails
     *     without a failure policy, or on a configuration error (default: 503)
     * @param null|string $keyPrefix put before every key (default "rl:<policy>:<kind>:", e.g.
     *     "rl:default:sliding:") so that two limiters on one server never share a key; "" for none
     * @throws \InvalidArgumentException when $policy is not an RFC 8941 string (printable ASCII)
     */
    public function __construct(
        private readonly Limiter $limiter,
        private readonly string $policy = 'default',
        ?callable $key = null,
        ?callable $cost = null,
        private readonly bool $xRateLimit = false,
        ?callable $denied = null,
        ?callable $error = null,
        ?string $keyPrefix = null,
    ) {
        Headers::sfString($policy);
        $this->keyPrefix = $keyPrefix ?? 'rl:' . $policy . ':' . ($limiter instanceof BaseLimiter ? $limiter->kind() : 'limiter') . ':';
        $this->key = $key !== null ? \Closure::fromCallable($key) : static fn (mixed $r): ?string => self::keyByIp();
        $this->cost = $cost !== null ? \Closure::fromCallable($cost) : null;
        $this->denied = $denied !== null ? \Closure::fromCallable($denied) : static function (): string {
            http_response_code(429);
            return "rate limit exceeded\n";
        };
        $this->error = $error !== null ? \Closure::fromCallable($error) : static function (): string {
            http_response_code(503);
            return "rate limiter unavailable\n";
        };
    }

    /**
     * @param callable(mixed): mixed $next the protected handler
     * @param null|callable(string, string): void $emit sets one response field (default: header())
     */
    public function handle(mixed $request, callable $next, ?callable $emit = null): mixed
    {
        $emit ??= static function (string $name, string $value): void {
            header($name . ': ' . $value);
        };
        $key = ($this->key)($request);
        if ($key === null || $key === '') {
            return $next($request);
        }
        $key = $this->keyPrefix . $key;
        $n = $this->cost !== null ? ($this->cost)($request) : 1;
        $lease = null;
        try {
            if ($this->limiter instanceof Concurrency) {
                $r = $this->limiter->acquire($key, $n);
                $lease = $r->lease;
                $d = $r->decision;
            } else {
                $d = $this->limiter->decide($key, $n);
            }
        } catch (RlserverException $e) {
            return ($this->error)($request, $e);
        }
        try {
            foreach (Headers::for($this->policy, $this->limiter->window(), $d, $this->xRateLimit) as $name => $value) {
                $emit($name, $value);
            }
            if (!$d->allowed) {
                return ($this->denied)($request, $d);
            }
            return $next($request);
        } finally {
            if ($lease !== null) {
                try {
                    $lease->release();
                } catch (RlserverException) {
                    // The lease expires on its own.
                }
            }
        }
    }

    /** The prefix put before every key (see the constructor). */
    public function keyPrefix(): string
    {
        return $this->keyPrefix;
    }

    /** The client address of the current PHP request. */
    public static function keyByIp(): ?string
    {
        $ip = $_SERVER['REMOTE_ADDR'] ?? null;
        return is_string($ip) ? $ip : null;
    }
}
