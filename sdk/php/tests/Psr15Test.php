<?php

declare(strict_types=1);

namespace Rlserver\Tests;

use Nyholm\Psr7\Factory\Psr17Factory;
use Psr\Http\Message\ResponseInterface;
use Psr\Http\Message\ServerRequestInterface;
use Psr\Http\Server\MiddlewareInterface;
use Psr\Http\Server\RequestHandlerInterface;
use Rlserver\Client;
use Rlserver\Decision;
use Rlserver\FailureMode;
use Rlserver\Options;
use Rlserver\Psr15Middleware;

/** The PSR-15 middleware on PSR-7 messages (Nyholm's), decided by a real server. */
final class Psr15Test extends ServerTestCase
{
    private Psr17Factory $f;

    protected function setUp(): void
    {
        parent::setUp();
        $this->f = new Psr17Factory();
    }

    /** A handler answering 200 "ok", counting its calls. */
    private function handler(int &$calls): RequestHandlerInterface
    {
        return new class ($this->f, $calls) implements RequestHandlerInterface {
            public function __construct(private Psr17Factory $f, private int &$calls)
            {
            }

            public function handle(ServerRequestInterface $request): ResponseInterface
            {
                $this->calls++;
                return $this->f->createResponse(200)->withHeader('X-Handler', 'yes');
            }
        };
    }

    private function request(string $ip): ServerRequestInterface
    {
        return $this->f->createServerRequest('GET', 'http://api.test/orders', ['REMOTE_ADDR' => $ip]);
    }

    public function testLimitsByClientAddress(): void
    {
        $mw = new Psr15Middleware($this->c->tokenBucket(2, 1, '1s'), $this->f, policy: 'api', xRateLimit: true);
        $this->assertInstanceOf(MiddlewareInterface::class, $mw);
        $calls = 0;
        $h = $this->handler($calls);
        $r = $mw->process($this->request('10.0.0.1'), $h);
        $this->assertSame(200, $r->getStatusCode());
        $this->assertSame('yes', $r->getHeaderLine('X-Handler'));
        $this->assertSame('"api";q=2;w=2', $r->getHeaderLine('RateLimit-Policy'));
        $this->assertSame('"api";r=1;t=1', $r->getHeaderLine('RateLimit'));
        $this->assertSame(['2', '1', '1'], [$r->getHeaderLine('X-RateLimit-Limit'), $r->getHeaderLine('X-RateLimit-Remaining'), $r->getHeaderLine('X-RateLimit-Reset')]);
        $this->assertSame(200, $mw->process($this->request('10.0.0.1'), $h)->getStatusCode());
        $r = $mw->process($this->request('10.0.0.1'), $h);
        $this->assertSame(429, $r->getStatusCode());
        $this->assertSame('1', $r->getHeaderLine('Retry-After'));
        $this->assertSame('"api";r=0;t=2', $r->getHeaderLine('RateLimit'));
        $this->assertSame("rate limit exceeded\n", (string) $r->getBody());
        $this->assertSame(2, $calls);
        // Another address is its own key; the server holds both.
        $this->assertSame(200, $mw->process($this->request('10.0.0.2'), $h)->getStatusCode());
        $this->assertSame(3, $calls);
        $this->assertSame([1, 2, 1, 0, 1000], $this->redis->rawCommand('CL.TOKENBUCKET', 'rl:api:tokenbucket:10.0.0.2', '2', '1', '1s', '0'));
        // Time refills the bucket.
        Server::advance($this->redis, 1000);
        $this->assertSame(200, $mw->process($this->request('10.0.0.1'), $h)->getStatusCode());
    }

    public function testKeyCostAndDeniedCallbacks(): void
    {
        $mw = new Psr15Middleware(
            $this->c->window(\Rlserver\WindowMode::Fixed, 5, '1m'),
            $this->f,
            key: fn (ServerRequestInterface $r): ?string => $r->getHeaderLine('X-Api-Key') ?: null,
            cost: fn (ServerRequestInterface $r): int => (int) ($r->getQueryParams()['n'] ?? 1),
            denied: fn (ServerRequestInterface $r, Decision $d): ResponseInterface => $this->f->createResponse(503)->withHeader('X-Wait-Ms', (string) $d->retryAfterMs),
        );
        $calls = 0;
        $h = $this->handler($calls);
        $req = fn (int $n) => $this->request('10.0.0.1')->withHeader('X-Api-Key', 'k1')->withQueryParams(['n' => (string) $n]);
        $this->assertSame(200, $mw->process($req(4), $h)->getStatusCode());
        $r = $mw->process($req(2), $h);
        $this->assertSame(503, $r->getStatusCode());
        $this->assertSame('60000', $r->getHeaderLine('X-Wait-Ms'));
        $this->assertSame('60', $r->getHeaderLine('Retry-After'));
        $this->assertSame(200, $mw->process($req(1), $h)->getStatusCode());
        // No key: passed through unlimited and without fields.
        $r = $mw->process($this->request('10.0.0.1'), $h);
        $this->assertSame(200, $r->getStatusCode());
        $this->assertFalse($r->hasHeader('RateLimit'));
        $this->assertSame(3, $calls);
    }

    public function testServerDown(): void
    {
        $calls = 0;
        $h = $this->handler($calls);
        $stopped = new Server();
        $r = $stopped->redis();
        $stopped->stop();
        // No failure policy: 503 from the middleware, the handler not called.
        $mw = new Psr15Middleware((new Client($r))->tokenBucket(2, 1, '1s'), $this->f);
        $res = $mw->process($this->request('10.0.0.1'), $h);
        $this->assertSame(503, $res->getStatusCode());
        $this->assertSame(0, $calls);
        // Fail open: the handler runs.
        $mw = new Psr15Middleware((new Client($r, new Options(failure: FailureMode::Open)))->tokenBucket(2, 1, '1s'), $this->f);
        $this->assertSame(200, $mw->process($this->request('10.0.0.1'), $h)->getStatusCode());
        $this->assertSame(1, $calls);
    }
}
