<?php

declare(strict_types=1);

namespace Rlserver\Tests;

use Rlserver\Client;
use Rlserver\Decision;
use Rlserver\Duration;
use Rlserver\LimitedException;
use Rlserver\Middleware;
use Rlserver\WindowMode;

/** The typed API beyond the conformance cases: scoped leases, durations, the middleware. */
final class LimitersTest extends ServerTestCase
{
    public function testScopedLeaseAlwaysReleases(): void
    {
        $cc = $this->c->concurrency(1, '30s');
        $this->assertSame('done', $cc->run('job', fn () => 'done'));
        // Released: the next one is admitted, even when the body throws.
        try {
            $cc->run('job', function (): never {
                throw new \DomainException('boom');
            });
            $this->fail('the body\'s exception was swallowed');
        } catch (\DomainException $e) {
            $this->assertSame('boom', $e->getMessage());
        }
        // While one is held, run() raises LimitedException with the decision.
        $held = $cc->acquire('job');
        $this->assertNotNull($held->lease);
        try {
            $cc->run('job', fn () => 'never');
            $this->fail('admitted over the limit');
        } catch (LimitedException $e) {
            $this->assertFalse($e->decision->allowed);
            $this->assertSame(30000, $e->decision->retryAfterMs);
        }
        $this->assertTrue($held->lease->renew('1m'));
        $this->assertTrue($held->lease->release());
        $this->assertFalse($held->lease->release());
        $this->assertFalse($held->lease->renew(5));
    }

    public function testLeaseExpiresOnServerClock(): void
    {
        $cc = $this->c->concurrency(1, 2);
        $a = $cc->acquire('k');
        $this->assertNotNull($a->lease);
        $this->assertSame(16, strlen($a->lease->id));
        Server::advance($this->redis, 2000);
        $this->assertNotNull($cc->acquire('k')->lease);
        $this->assertFalse($a->lease->release());
    }

    public function testReserveAndDecisionDurations(): void
    {
        $tb = $this->c->tokenBucket(10, 20, '1m');
        $d = $tb->reserve('q', 10, '10s');
        $this->assertTrue($d->allowed);
        $d = $tb->reserve('q', 2, '10s');
        $this->assertEquals(new Decision(true, 10, 0, 6000, 36000), $d);
        $this->assertSame(6.0, $d->retryAfter);
        $this->assertSame(36.0, $d->resetAfter);
        $this->assertSame(6, $d->retryAfterInterval()->s);
        $never = $tb->allow('q', 11);
        $this->assertTrue($never->never());
        $this->assertSame(Decision::NEVER, $never->retryAfter);
        $this->assertNull($never->retryAfterInterval());
    }

    public function testWait(): void
    {
        $tb = $this->c->tokenBucket(1, 1000, '1s'); // a token a millisecond
        $this->assertEquals(new Decision(true, 1, 0, 0, 1), $tb->wait('w'));
        $start = microtime(true);
        $d = $tb->wait('w');
        $this->assertSame(1, $d->retryAfterMs); // queued behind the first, and waited for
        $this->assertGreaterThanOrEqual(0.001, microtime(true) - $start);
        try {
            $tb->wait('w', 1, '1ms'); // now 2 ms away: beyond max_wait
            $this->fail('waited beyond max_wait');
        } catch (LimitedException $e) {
            $this->assertSame(2, $e->decision->retryAfterMs);
        }
        try {
            $tb->wait('w', 2);
            $this->fail('waited for more than the capacity');
        } catch (LimitedException $e) {
            $this->assertTrue($e->decision->never());
        }
    }

    public function testDurations(): void
    {
        $this->assertSame(1500, Duration::toMs(1.5));
        $this->assertSame(2000, Duration::toMs(2));
        $this->assertSame(2000, Duration::toMs('2'));
        $this->assertSame(250, Duration::toMs('250ms'));
        $this->assertSame(900_000, Duration::toMs('15m'));
        $this->assertSame(7_200_000, Duration::toMs('2h'));
        $this->assertSame(86_400_000, Duration::toMs('1d'));
        $this->assertSame(90_000, Duration::toMs(new \DateInterval('PT1M30S')));
        $this->assertSame(1, Duration::toMs(0.0001));
        $this->expectException(\InvalidArgumentException::class);
        Duration::toMs('1.5s');
    }

    public function testThrottleAndAll(): void
    {
        $th = $this->c->throttle(1, 1, 1);
        $this->assertSame(2.0, $th->window());
        $this->assertTrue($th->allow('g')->allowed);
        $this->assertTrue($th->allow('g')->allowed);
        $d = $th->allow('g');
        $this->assertFalse($d->allowed);
        $this->assertSame(1000, $d->retryAfterMs);
        $w = $this->c->window(WindowMode::Fixed, 1, 60);
        $ad = $this->c->all(1, $w->rule('{u}:a'), $this->c->concurrency(1, 60)->rule('{u}:b'));
        $this->assertTrue($ad->allowed);
        $this->assertNull($ad->leases[0]);
        $this->assertNotNull($ad->leases[1]);
        $ad2 = $this->c->all(1, $w->rule('{u}:a'), $this->c->concurrency(1, 60)->rule('{u}:c'));
        $this->assertFalse($ad2->allowed);
        $this->assertTrue($ad->leases[1]->release());
    }

    public function testMiddleware(): void
    {
        $mw = new Middleware($this->c->tokenBucket(2, 1, '1s'), key: fn (array $req) => $req['user'] ?? null, xRateLimit: true,
            denied: fn (array $req, Decision $d) => ['status' => 429]);
        $next = fn (array $req) => ['status' => 200];
        $run = function (array $req) use ($mw, $next): array {
            $h = [];
            $res = $mw->handle($req, $next, function (string $n, string $v) use (&$h): void {
                $h[$n] = $v;
            });
            return [$res['status'], $h];
        };
        [$s, $h] = $run(['user' => 'ann']);
        $this->assertSame(200, $s);
        $this->assertSame([
            'RateLimit-Policy' => '"default";q=2;w=2',
            'RateLimit' => '"default";r=1;t=1',
            'X-RateLimit-Limit' => '2',
            'X-RateLimit-Remaining' => '1',
            'X-RateLimit-Reset' => '1',
        ], $h);
        $run(['user' => 'ann']);
        [$s, $h] = $run(['user' => 'ann']);
        $this->assertSame(429, $s);
        $this->assertSame('1', $h['Retry-After']);
        $this->assertSame('"default";r=0;t=2', $h['RateLimit']);
        // No key: not limited, no fields.
        [$s, $h] = $run([]);
        $this->assertSame([200, []], [$s, $h]);
    }

    public function testMiddlewareHoldsLeaseForTheRequestOnly(): void
    {
        $cc = $this->c->concurrency(1, '1m');
        $mw = new Middleware($cc, policy: 'jobs', key: fn () => 'k', denied: fn () => 429, keyPrefix: '');
        $inner = null;
        $res = $mw->handle(null, function () use ($cc, &$inner) {
            $inner = $cc->acquire('k')->decision; // held while the handler runs
            return 200;
        }, function (): void {
        });
        $this->assertSame(200, $res);
        $this->assertFalse($inner->allowed);
        $this->assertNotNull($cc->acquire('k')->lease); // released after it
    }
}
