<?php

declare(strict_types=1);

namespace Rlserver\Tests;

use PHPUnit\Framework\TestCase;
use Rlserver\Client;
use Rlserver\Decision;
use Rlserver\ErrorEvent;
use Rlserver\FailureMode;
use Rlserver\LocalStore;
use Rlserver\Options;
use Rlserver\ServerException;
use Rlserver\UnreachableException;
use Rlserver\WindowMode;

/** The failure policy, against a server that answered once and is now stopped. */
final class PolicyTest extends TestCase
{
    private static function stoppedServer(): \Redis
    {
        $srv = new Server();
        $r = $srv->redis();
        self::assertTrue($r->ping() !== false);
        $srv->stop();
        return $r;
    }

    public function testFailOpenAndClosed(): void
    {
        $r = self::stoppedServer();
        foreach ([FailureMode::Open, FailureMode::Closed] as $mode) {
            $events = [];
            $c = new Client($r, new Options(failure: $mode, closedRetryAfter: 2.0, onError: function (ErrorEvent $e) use (&$events): void {
                $events[] = $e;
            }));
            $d = $c->tokenBucket(5, 1, 1)->allow('k');
            $want = $mode === FailureMode::Open
                ? new Decision(true, 5, 5, 0, 0, true)
                : new Decision(false, 5, 0, 2000, 2000, true);
            $this->assertEquals($want, $d, $mode->name);
            $this->assertCount(1, $events, $mode->name);
            $this->assertSame('CL.TOKENBUCKET', $events[0]->command);
            $this->assertSame('k', $events[0]->key);
            $this->assertSame($mode, $events[0]->mode);
            $this->assertInstanceOf(UnreachableException::class, $events[0]->error);
        }
        // FailureMode::Error (the default) raises and calls no hook.
        $called = false;
        $c = new Client($r, new Options(onError: function () use (&$called): void {
            $called = true;
        }));
        try {
            $c->window(WindowMode::Fixed, 3, 60)->allow('k');
            $this->fail('no exception with FailureMode::Error');
        } catch (UnreachableException) {
        }
        $this->assertFalse($called);
        // A closed policy denies leases; an open one grants a lease that releases locally.
        $c = new Client($r, new Options(failure: FailureMode::Closed));
        $this->assertNull($c->concurrency(2, 60)->acquire('job')->lease);
        $c = new Client($r, new Options(failure: FailureMode::Open));
        $a = $c->concurrency(2, 60)->acquire('job');
        $this->assertNotNull($a->lease);
        $this->assertEquals(new Decision(true, 2, 0, 0, 0, true), $a->decision);
        $this->assertTrue($a->lease->release());
    }

    public function testFailLocalFallback(): void
    {
        $r = self::stoppedServer();
        $calls = 0;
        $c = new Client($r, new Options(failure: FailureMode::Local, onError: function () use (&$calls): void {
            $calls++;
        }));
        $now = 1_800_000_000.0;
        $c->setLocalStore(new LocalStore(function () use (&$now): float {
            return $now;
        }));
        $tb = $c->tokenBucket(2, 1, 1);
        $got = [$tb->allow('user'), $tb->allow('user'), $tb->allow('user')];
        $this->assertEquals([
            new Decision(true, 2, 1, 0, 1000, true),
            new Decision(true, 2, 0, 0, 2000, true),
            new Decision(false, 2, 0, 1000, 2000, true),
        ], $got);
        // Another key has its own local bucket; time refills it.
        $this->assertTrue($tb->allow('other', 2)->allowed);
        $now += 1.0;
        $d = $tb->allow('user');
        $this->assertTrue($d->allowed);
        $this->assertSame(0, $d->remaining);
        // Leases fall back to a local semaphore, released by the lease.
        $cc = $c->concurrency(1, 60);
        $a = $cc->acquire('job');
        $this->assertNotNull($a->lease);
        $this->assertTrue($a->decision->allowed);
        $b = $cc->acquire('job');
        $this->assertNull($b->lease);
        $this->assertFalse($b->decision->allowed);
        $this->assertTrue($a->lease->release());
        $this->assertNotNull($cc->acquire('job')->lease);
        // all() checks every rule before consuming any.
        $ad = $c->all(1, $c->window(WindowMode::Fixed, 1, 60)->rule('a'), $c->window(WindowMode::Fixed, 5, 60)->rule('b'));
        $this->assertTrue($ad->allowed);
        $ad = $c->all(1, $c->window(WindowMode::Fixed, 1, 60)->rule('a'), $c->window(WindowMode::Fixed, 5, 60)->rule('b'));
        $this->assertFalse($ad->allowed);
        $this->assertSame(4, $ad->decisions[1]->remaining);
        $this->assertSame(10, $calls);
    }

    public function testServerErrorsAreNotFailures(): void
    {
        $srv = new Server();
        $called = false;
        $c = new Client($srv->redis(), new Options(failure: FailureMode::Open, onError: function () use (&$called): void {
            $called = true;
        }));
        $this->assertTrue($c->tokenBucket(5, 1, 1)->allow('k')->allowed);
        // A bad argument raises, whatever the policy, and is no failure of the
        // server (WRONGTYPE, a configuration error, is ConfigTest's).
        try {
            $c->tokenBucket(5, 1, 1)->allow('k', -1);
            $this->fail('bad argument accepted');
        } catch (ServerException $e) {
            $this->assertStringStartsWith('ERR', $e->getMessage());
        }
        $this->assertFalse($called);
        $srv->stop();
    }

    public function testTimeoutFailsOpen(): void
    {
        // A listener that accepts (through the backlog) and never answers.
        $ln = stream_socket_server('tcp://127.0.0.1:0', $errno, $errstr);
        $this->assertNotFalse($ln, $errstr);
        [$host, $port] = explode(':', stream_socket_get_name($ln, false));
        $r = new \Redis();
        $r->connect($host, (int) $port, 5.0);
        $got = null;
        $c = new Client($r, new Options(timeout: 0.05, failure: FailureMode::Open, onError: function (ErrorEvent $e) use (&$got): void {
            $got = $e->error;
        }));
        $start = microtime(true);
        $d = $c->leakyBucket(3, 1, 1)->allow('k');
        $this->assertTrue($d->allowed);
        $this->assertTrue($d->fallback);
        $this->assertNotNull($got);
        $this->assertLessThan(5.0, microtime(true) - $start);
        fclose($ln);
    }
}
