<?php

declare(strict_types=1);

namespace Rlserver\Tests;

use PHPUnit\Framework\TestCase;
use Rlserver\Client;
use Rlserver\Decision;
use Rlserver\ErrorEvent;
use Rlserver\FailureMode;
use Rlserver\Headers;
use Rlserver\Middleware;
use Rlserver\Options;
use Rlserver\ServerException;
use Rlserver\UnreachableException;
use Rlserver\WindowMode;

/**
 * Faults a newcomer meets: a server down before the first request, limiters
 * sharing the default key, a wrong password, policy names that are not
 * RFC 8941 strings.
 */
final class ConfigTest extends TestCase
{
    /** A 127.0.0.1 port where a server was and is no more. */
    private static function deadPort(): int
    {
        $srv = new Server();
        $port = $srv->port;
        $srv->stop();
        return $port;
    }

    public function testServerDownBeforeTheFirstRequest(): void
    {
        $port = self::deadPort();
        $events = [];
        $opts = new Options(timeout: 0.1, failure: FailureMode::Open, onError: function (ErrorEvent $e) use (&$events): void {
            $events[] = $e;
        });
        // Client::connect connects on first use: the policy answers.
        $c = Client::connect('127.0.0.1', $port, $opts);
        $this->assertEquals(new Decision(true, 5, 5, 0, 0, true), $c->tokenBucket(5, 1, 1)->allow('k'));
        // A \Redis whose connect() failed (and was caught): setOption would throw.
        $r = new \Redis();
        try {
            $r->connect('127.0.0.1', $port, 0.1);
            $this->fail('connected to a stopped server');
        } catch (\RedisException) {
        }
        $c = new Client($r, $opts);
        $this->assertEquals(new Decision(true, 3, 3, 0, 0, true), $c->window(WindowMode::Fixed, 3, 60)->allow('k'));
        $this->assertCount(2, $events);
        foreach ($events as $e) {
            $this->assertInstanceOf(UnreachableException::class, $e->error);
            $this->assertFalse($e->config);
            $this->assertSame(FailureMode::Open, $e->mode);
        }
        // With FailureMode::Error the first call raises UnreachableException, not RedisException.
        $this->expectException(UnreachableException::class);
        Client::connect('127.0.0.1', $port, new Options(timeout: 0.1))->check();
    }

    public function testTwoLimitersOnTheDefaultKeyDoNotCollide(): void
    {
        $srv = new Server();
        $r = $srv->redis();
        Server::setClock($r, Server::EPOCH_MS);
        $events = [];
        $c = new Client($r, new Options(failure: FailureMode::Open, onError: function (ErrorEvent $e) use (&$events): void {
            $events[] = $e;
        }));
        $bucket = new Middleware($c->tokenBucket(2, 1, 1));
        $window = new Middleware($c->window(WindowMode::Sliding, 3, 60));
        $request = ['REMOTE_ADDR' => '192.0.2.7'];
        $_SERVER['REMOTE_ADDR'] = '192.0.2.7';
        $got = [];
        try {
            foreach ([$bucket, $window, $bucket, $window, $bucket, $window, $window] as $mw) {
                $fields = [];
                $out = $mw->handle($request, fn () => 'ok', function (string $n, string $v) use (&$fields): void {
                    $fields[$n] = $v;
                }, );
                $got[] = ($out === 'ok' ? 'ok' : 'denied') . ' ' . ($fields['RateLimit'] ?? '');
            }
        } finally {
            unset($_SERVER['REMOTE_ADDR']);
            http_response_code(200);
        }
        $this->assertSame([
            'ok "default";r=1;t=1', 'ok "default";r=2;t=120',
            'ok "default";r=0;t=2', 'ok "default";r=1;t=120',
            'denied "default";r=0;t=2', 'ok "default";r=0;t=120',
            'denied "default";r=0;t=120',
        ], $got);
        $this->assertSame(1, $r->exists('rl:default:tokenbucket:192.0.2.7'));
        $this->assertSame(1, $r->exists('rl:default:sliding:192.0.2.7'));
        $this->assertSame([], $events);
        $this->assertSame('rl:api:fixed:', (new Middleware($c->window(WindowMode::Fixed, 1, 60), 'api'))->keyPrefix());
        $this->assertSame('', (new Middleware($c->concurrency(1, 60), keyPrefix: ''))->keyPrefix());
        $srv->stop();
    }

    public function testWrongTypeIsReportedLoudly(): void
    {
        $srv = new Server();
        $events = [];
        $logged = [];
        $c = new Client($srv->redis(), new Options(failure: FailureMode::Open, onError: function (ErrorEvent $e) use (&$events): void {
            $events[] = $e;
        }, log: function (string $l) use (&$logged): void {
            $logged[] = $l;
        }));
        $this->assertTrue($c->tokenBucket(5, 1, 1)->allow('k')->allowed);
        try {
            $c->window(WindowMode::Fixed, 5, 1)->allow('k');
            $this->fail('WRONGTYPE not raised');
        } catch (ServerException $e) {
            $this->assertStringStartsWith('WRONGTYPE', $e->getMessage());
        }
        $this->assertCount(1, $events);
        $this->assertTrue($events[0]->config);
        $this->assertSame(FailureMode::Error, $events[0]->mode);
        $this->assertSame('CL.WINDOW', $events[0]->command);
        $this->assertSame('k', $events[0]->key);
        $this->assertCount(1, $logged);
        $this->assertStringStartsWith('rlserver: configuration error on CL.WINDOW "k": WRONGTYPE', $logged[0]);
        // A bad argument is the caller's error: raised, not reported.
        try {
            $c->tokenBucket(5, 1, 1)->allow('k', -1);
            $this->fail('bad argument accepted');
        } catch (ServerException) {
        }
        $this->assertCount(1, $events);
        $srv->stop();
    }

    public function testWrongOrMissingPasswordIsReported(): void
    {
        $srv = new Server(['--port', '0', '--requirepass', 's3cret']);
        foreach ([['wrong', 'WRONGPASS'], [null, 'NOAUTH']] as [$password, $code]) {
            $events = [];
            $logged = [];
            $c = Client::connect($srv->host, $srv->port, new Options(timeout: 1.0, failure: FailureMode::Open, onError: function (ErrorEvent $e) use (&$events): void {
                $events[] = $e;
            }, log: function (string $l) use (&$logged): void {
                $logged[] = $l;
            }), $password);
            try {
                $c->check();
                $this->fail("$code: check passed");
            } catch (ServerException $e) {
                $this->assertStringStartsWith($code, $e->getMessage());
            }
            // Not admitted by the open policy: the middleware answers its error (503).
            $status = null;
            $mw = new Middleware($c->tokenBucket(2, 1, 1), key: fn () => 'a', error: function ($req, \Throwable $e) use (&$status): string {
                $status = 503;
                return $e->getMessage();
            });
            $out = $mw->handle([], fn () => 'ok', function (): void {
            });
            $this->assertSame(503, $status, "$code: $out");
            $this->assertCount(2, $events, $code);
            $this->assertSame('PING', $events[0]->command);
            $this->assertSame('CL.TOKENBUCKET', $events[1]->command);
            $this->assertSame('rl:default:tokenbucket:a', $events[1]->key);
            foreach ($events as $e) {
                $this->assertTrue($e->config);
                $this->assertSame(FailureMode::Error, $e->mode);
                $this->assertStringStartsWith($code, $e->error->getMessage());
            }
            $this->assertCount(2, $logged);
            $this->assertStringContainsString($code, $logged[1]);
        }
        Client::connect($srv->host, $srv->port, new Options(), 's3cret')->check();
        $srv->stop();
    }

    public function testPolicyNamesAreSfStrings(): void
    {
        $h = Headers::for('a "q" \\ b', 1.0, new Decision(true, 1, 1, 0, 0));
        $this->assertSame('"a \\"q\\" \\\\ b";r=1;t=0', $h['RateLimit']);
        $c = new Client(new \Redis());
        foreach (["tab\there", 'é', "nl\n", "del\x7f"] as $bad) {
            try {
                new Middleware($c->tokenBucket(1, 1, 1), $bad);
                $this->fail(json_encode($bad) . ' accepted');
            } catch (\InvalidArgumentException $e) {
                $this->assertStringContainsString('RFC 8941', $e->getMessage());
            }
        }
    }
}
