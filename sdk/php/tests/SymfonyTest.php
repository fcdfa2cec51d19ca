<?php

declare(strict_types=1);

namespace Rlserver\Tests;

use Rlserver\Client;
use Rlserver\Symfony\RlserverLimiter;
use Rlserver\Symfony\RlserverLimiterFactory;
use Symfony\Component\RateLimiter\Exception\MaxWaitDurationExceededException;
use Symfony\Component\RateLimiter\Exception\RateLimitExceededException;
use Symfony\Component\RateLimiter\Exception\ReserveNotSupportedException;
use Symfony\Component\RateLimiter\LimiterInterface;
use Symfony\Component\RateLimiter\Policy\NoLimiter;

/** The Symfony RateLimiter adapter: LimiterInterface and the factory, decided by rlserver. */
final class SymfonyTest extends ServerTestCase
{
    public function testTokenBucketConsumeAndReserve(): void
    {
        $f = new RlserverLimiterFactory(['id' => 'api', 'policy' => 'token_bucket', 'limit' => 2, 'rate' => ['interval' => '1 second', 'amount' => 1]], $this->c);
        $l = $f->create('ann');
        $this->assertInstanceOf(LimiterInterface::class, $l);
        $rl = $l->consume(2);
        $this->assertTrue($rl->isAccepted());
        $this->assertSame(0, $rl->getRemainingTokens());
        $this->assertSame(2, $rl->getLimit());
        // The state is the server's: a peek at the key Symfony's id-key names.
        $this->assertSame([1, 2, 0, 0, 2000], $this->redis->rawCommand('CL.TOKENBUCKET', 'api-ann', '2', '1', '1s', '0'));
        $before = microtime(true);
        $rl = $l->consume();
        $after = microtime(true);
        $this->assertFalse($rl->isAccepted());
        $t = (float) $rl->getRetryAfter()->format('U.u');
        $this->assertGreaterThanOrEqual($before + 1.0 - 0.000001, $t);
        $this->assertLessThanOrEqual($after + 1.0 + 0.000001, $t);
        try {
            $rl->ensureAccepted();
            $this->fail('ensureAccepted passed a denial');
        } catch (RateLimitExceededException $e) {
            $this->assertSame(0, $e->getRemainingTokens());
        }
        // reserve: queued behind the debt within maxTime, refused beyond it.
        $before = microtime(true);
        $res = $l->reserve(1, 5.0);
        $this->assertTrue($res->getRateLimit()->isAccepted());
        $this->assertGreaterThanOrEqual($before + 1.0 - 0.000001, $res->getTimeToAct());
        $this->assertLessThanOrEqual(microtime(true) + 1.0 + 0.000001, $res->getTimeToAct());
        try {
            $l->reserve(1, 0.5);
            $this->fail('reserved beyond maxTime');
        } catch (MaxWaitDurationExceededException $e) {
            $this->assertFalse($e->getRateLimit()->isAccepted());
        }
        // More than the burst can never succeed, as in Symfony.
        try {
            $l->consume(3);
            $this->fail('consumed more than the burst');
        } catch (\InvalidArgumentException) {
        }
        // reset forgets the key; other keys are their own.
        $l->reset();
        $this->assertSame(2, $l->consume(0)->getRemainingTokens());
        $this->assertTrue($f->create('bob')->consume(2)->isAccepted());
    }

    public function testWindowsAndNoLimit(): void
    {
        $fixed = (new RlserverLimiterFactory(['id' => 'w', 'policy' => 'fixed_window', 'limit' => 3, 'interval' => '1 minute'], $this->c))->create('k');
        $this->assertTrue($fixed->consume(3)->isAccepted());
        $this->assertFalse($fixed->consume()->isAccepted());
        Server::advance($this->redis, 60_000);
        $rl = $fixed->consume();
        $this->assertTrue($rl->isAccepted());
        $this->assertSame(2, $rl->getRemainingTokens());
        $this->assertSame(3, $rl->getLimit());
        // reserve on a fixed window, as Symfony's: now while it has room,
        // else at its end, within maxTime.
        $before = microtime(true);
        $res = $fixed->reserve(2);
        $this->assertTrue($res->getRateLimit()->isAccepted());
        $this->assertSame(0, $res->getRateLimit()->getRemainingTokens());
        $this->assertGreaterThanOrEqual($before, $res->getTimeToAct());
        $this->assertLessThanOrEqual(microtime(true), $res->getTimeToAct());
        $before = microtime(true);
        $res = $fixed->reserve(1, 120.0);
        $this->assertFalse($res->getRateLimit()->isAccepted());
        $this->assertGreaterThanOrEqual($before + 60.0 - 0.000001, $res->getTimeToAct());
        $this->assertLessThanOrEqual(microtime(true) + 60.0 + 0.000001, $res->getTimeToAct());
        try {
            $fixed->reserve(1, 30.0);
            $this->fail('reserved beyond maxTime');
        } catch (MaxWaitDurationExceededException $e) {
            $this->assertFalse($e->getRateLimit()->isAccepted());
        }
        try {
            $fixed->reserve(4);
            $this->fail('reserved more than the limit');
        } catch (\InvalidArgumentException) {
        }
        Server::advance($this->redis, 60_000);
        $this->assertSame(3, $fixed->consume(0)->getRemainingTokens());
        $sliding = new RlserverLimiterFactory(['id' => 's', 'policy' => 'sliding_window', 'limit' => 2, 'interval' => '10 seconds'], $this->c);
        $this->assertSame(10.0, $sliding->limiter()->window());
        $this->assertTrue($sliding->create('k')->consume(2)->isAccepted());
        $this->assertFalse($sliding->create('k')->consume()->isAccepted());
        try {
            $sliding->create('k')->reserve();
            $this->fail('reserve on a sliding window');
        } catch (ReserveNotSupportedException) {
        }
        $none = (new RlserverLimiterFactory(['id' => 'n', 'policy' => 'no_limit'], $this->c))->create('k');
        $this->assertInstanceOf(NoLimiter::class, $none);
        $this->expectException(\LogicException::class);
        new RlserverLimiterFactory(['id' => 'x', 'policy' => 'leaky'], $this->c);
    }

    public function testRateLimitOfDecision(): void
    {
        $rl = RlserverLimiter::rateLimit(new \Rlserver\Decision(true, 5, 4, 0, 200));
        $this->assertTrue($rl->isAccepted());
        $this->assertSame(4, $rl->getRemainingTokens());
        $this->assertLessThanOrEqual(microtime(true), (float) $rl->getRetryAfter()->format('U.u'));
    }
}
