<?php

declare(strict_types=1);

namespace Rlserver;

use Psr\Http\Message\ResponseFactoryInterface;
use Psr\Http\Message\ResponseInterface;
use Psr\Http\Message\ServerRequestInterface;
use Psr\Http\Server\MiddlewareInterface;
use Psr\Http\Server\RequestHandlerInterface;

/**
 * PSR-15 middleware: decides with the limiter, adds the RateLimit fields to
 * the handler's response or answers 429 (with Retry-After) itself. The
 * decision and the fields are Middleware's; this class only maps them onto
 * PSR-7 messages. Needs the PSR-15 and PSR-17 interfaces
 * (psr/http-server-middleware and psr/http-factory, or Debian's php-psr
 * extension) and a PSR-17 response factory of the application's choice.
 */
final class Psr15Middleware implements MiddlewareInterface
{
    private Middleware $inner;

    /**
     * @param null|callable(ServerRequestInterface): ?string $key the limited key of a request
     *     (null or "": not limited); default: the REMOTE_ADDR server parameter
     * @param null|callable(ServerRequestInterface): int $cost units a request takes (default 1)
     * @param null|callable(ServerRequestInterface, Decision): ResponseInterface $denied the response
     *     when denied (default: 429 with a short text body)
     * @param null|callable(ServerRequestInterface, \Throwable): ResponseInterface $error the response
     *     when the limiter fails without a failure policy, or on a configuration error (default: 503)
     * @param null|string $keyPrefix see Middleware (default "rl:<policy>:<kind>:")
     */
    public function __construct(
        Limiter $limiter,
        private readonly ResponseFactoryInterface $responses,
        string $policy = 'default',
        ?callable $key = null,
        ?callable $cost = null,
        bool $xRateLimit = false,
        ?callable $denied = null,
        ?callable $error = null,
        ?string $keyPrefix = null,
    ) {
        $this->inner = new Middleware(
            $limiter,
            $policy,
            $key ?? static fn (ServerRequestInterface $r): ?string => self::keyByIp($r),
            $cost,
            $xRateLimit,
            $denied ?? fn (ServerRequestInterface $r): ResponseInterface => $this->text(429, "rate limit exceeded\n"),
            $error ?? fn (ServerRequestInterface $r): ResponseInterface => $this->text(503, "rate limiter unavailable\n"),
            $keyPrefix,
        );
    }

    public function process(ServerRequestInterface $request, RequestHandlerInterface $handler): ResponseInterface
    {
        $fields = [];
        $response = $this->inner->handle(
            $request,
            static fn (ServerRequestInterface $r): ResponseInterface => $handler->handle($r),
            static function (string $name, string $value) use (&$fields): void {
                $fields[$name] = $value;
            },
        );
        if (!$response instanceof ResponseInterface) {
            throw new \UnexpectedValueException('rlserver: the denied/error callback must return a ' . ResponseInterface::class);
        }
        foreach ($fields as $name => $value) {
            $response = $response->withHeader($name, $value);
        }
        return $response;
    }

    /** The client address of a PSR-7 request (its REMOTE_ADDR server parameter). */
    public static function keyByIp(ServerRequestInterface $request): ?string
    {
        $ip = $request->getServerParams()['REMOTE_ADDR'] ?? null;
        return is_string($ip) ? $ip : null;
    }

    private function text(int $status, string $body): ResponseInterface
    {
        $r = $this->responses->createResponse($status)->withHeader('Content-Type', 'text/plain; charset=utf-8');
        $r->getBody()->write($body);
        return $r;
    }
}
