<?php

declare(strict_types=1);

namespace Rlserver\Tests;

use Nyholm\Psr7\Factory\Psr17Factory;
use Psr\Http\Message\ResponseInterface;
use Psr\Http\Message\ServerRequestInterface;
use Psr\Http\Server\RequestHandlerInterface;
use Rlserver\Symfony\RlserverLimiterFactory;
use Symfony\Component\RateLimiter\LimiterInterface;
use Symfony\Component\Yaml\Yaml;

/**
 * Every fenced block of README.md is checked: the endpoint example by
 * ReadmeTest (it is example/index.php, run under php -S), the Cluster
 * set-up by ClusterTest::testReadmeClusterBlock, and the others here, each
 * run as written (eval) against a real server.
 */
final class ReadmeBlocksTest extends ServerTestCase
{
    public const ENDPOINT = 0;
    public const PSR15 = 1;
    public const LIMITERS = 2;
    public const CLUSTER = 3;
    public const SYMFONY = 4;
    public const SYMFONY_SERVICES = 5;
    public const TESTS = 6;

    /** @return list<array{0: string, 1: string}> each block's fence line and body */
    public static function blocks(): array
    {
        $readme = (string) file_get_contents(__DIR__ . '/../README.md');
        preg_match_all('/^(```\w*)\n(.*?)^```$/ms', $readme, $m, PREG_SET_ORDER);
        return array_map(fn ($x) => [$x[1], $x[2]], $m);
    }

    public function testEveryBlockIsChecked(): void
    {
        $got = array_map(fn ($b) => $b[0] . ' ' . strtok($b[1], "\n"), self::blocks());
        $this->assertSame([
            '```php use Rlserver\{Client, FailureMode, Middleware, Options, WindowMode};', // ReadmeTest
            '```php $app->pipe(new Psr15Middleware($rl->window(WindowMode::Sliding, 10, \'1m\'), $psr17, xRateLimit: true));', // testPsr15Block
            '```php $tb = $rl->tokenBucket(10, 20, \'1m\');          // capacity, rate per period', // testLimitersBlock
            '```php $rl = new Client(new \RedisCluster(null, [\'10.0.0.1:6379\', \'10.0.0.2:6379\'], 0.1, 0.1, false, $password));', // ClusterTest
            '```php $factory = new RlserverLimiterFactory([\'id\' => \'api\', \'policy\' => \'token_bucket\',', // testSymfonyBlock
            '```yaml services:', // testSymfonyServicesBlock
            '``` cd sdk/php && phpunit', // testTestsBlock
        ], $got);
    }

    /** The PSR-15 block, with a Mezzio-like $app that records what is piped, then the piped middleware run. */
    public function testPsr15Block(): void
    {
        $app = new class () {
            /** @var list<object> */
            public array $piped = [];

            public function pipe(object $mw): void
            {
                $this->piped[] = $mw;
            }
        };
        $rl = $this->c;
        $psr17 = new Psr17Factory();
        eval('use Rlserver\Psr15Middleware; use Rlserver\WindowMode; ' . self::blocks()[self::PSR15][1]);
        $this->assertCount(1, $app->piped);
        $handler = new class ($psr17) implements RequestHandlerInterface {
            public function __construct(private Psr17Factory $f)
            {
            }

            public function handle(ServerRequestInterface $request): ResponseInterface
            {
                return $this->f->createResponse(200);
            }
        };
        $request = $psr17->createServerRequest('GET', 'http://api.test/', ['REMOTE_ADDR' => '203.0.113.7']);
        $res = $app->piped[0]->process($request, $handler);
        $this->assertSame(200, $res->getStatusCode());
        $this->assertSame('"default";q=10;w=60', $res->getHeaderLine('RateLimit-Policy'));
        $this->assertSame('"default";r=9;t=120', $res->getHeaderLine('RateLimit'));
        $this->assertSame('10', $res->getHeaderLine('X-RateLimit-Limit'));
        $this->assertSame(1, $this->redis->exists('rl:default:sliding:203.0.113.7'));
    }

    /** The limiters block, run as written; its decisions and the state it leaves are exact. */
    public function testLimitersBlock(): void
    {
        if (!function_exists('work')) {
            eval('function work(): string { return "done"; }');
        }
        $rl = $this->c;
        eval('use Rlserver\WindowMode; ' . self::blocks()[self::LIMITERS][1]);
        $this->assertTrue($d->allowed);
        $this->assertSame(7, $d->remaining);
        $this->assertTrue($ad->allowed);
        $this->assertSame([9, 2], array_map(fn ($x) => $x->remaining, $ad->decisions));
        $this->assertSame([1, 10, 6, 0, 12000], $this->redis->rawCommand('CL.TOKENBUCKET', 'user:42', '10', '20', '1m', '0'));
        $this->assertSame(0, $this->redis->exists('jobs')); // the leases were released
    }

    /** The Symfony block against a request whose client address is 203.0.113.7. */
    public function testSymfonyBlock(): void
    {
        $rl = $this->c;
        $request = new class () {
            public function getClientIp(): string
            {
                return '203.0.113.7';
            }
        };
        eval('use Rlserver\Symfony\RlserverLimiterFactory; ' . self::blocks()[self::SYMFONY][1]);
        $this->assertSame([1, 10, 9, 0, 12000], $this->redis->rawCommand('CL.TOKENBUCKET', 'api-203.0.113.7', '10', '5', '1m', '0'));
    }

    /**
     * The services.yaml block, parsed as Symfony's YamlFileLoader parses it
     * (symfony/yaml, PARSE_CONSTANT | PARSE_CUSTOM_TAGS) and built as its
     * container builds those definitions (Debian cannot install
     * symfony/dependency-injection beside php-psr, which the PSR-15 tests
     * need): limiter.anonymous_api is an RlserverLimiterFactory under
     * framework.rate_limiter's service and autowiring names, deciding on the
     * server ($RLSERVER_HOST/PORT), and its Options (fail-open) answer with
     * the server down.
     */
    public function testSymfonyServicesBlock(): void
    {
        $yaml = Yaml::parse(self::blocks()[self::SYMFONY_SERVICES][1], Yaml::PARSE_CONSTANT | Yaml::PARSE_CUSTOM_TAGS);
        $this->assertSame(['services'], array_keys($yaml));
        $defs = $yaml['services'];
        $name = 'anonymous_api';
        $camel = lcfirst(str_replace('_', '', ucwords($name, '_')));
        $this->assertSame('@limiter.' . $name, $defs[RlserverLimiterFactory::class . ' $' . $camel . 'Limiter'] ?? null);
        $this->assertSame(['id' => $name, 'policy' => 'sliding_window', 'limit' => 100, 'interval' => '60 minutes'],
            $defs['limiter.' . $name]['arguments'][0]);
        $load = function (int $port) use ($defs, $name): LimiterInterface {
            $env = ['RLSERVER_HOST' => '127.0.0.1', 'RLSERVER_PORT' => (string) $port];
            $built = [];
            $service = function (string $id) use (&$service, &$built, $defs, $env) {
                if (isset($built[$id])) {
                    return $built[$id];
                }
                $def = $defs[$id];
                if (is_string($def)) {
                    return $service(substr($def, 1)); // an alias: '@id'
                }
                $resolve = function ($v) use (&$resolve, $service, $env) {
                    if (is_array($v)) {
                        return array_map($resolve, $v);
                    }
                    if (is_string($v) && str_starts_with($v, '@')) {
                        return $service(substr($v, 1));
                    }
                    if (is_string($v) && preg_match('/^%env\\((int:)?(\\w+)\\)%$/', $v, $m)) {
                        return $m[1] === 'int:' ? (int) $env[$m[2]] : $env[$m[2]];
                    }
                    return $v;
                };
                $args = [];
                foreach ($def['arguments'] ?? [] as $k => $v) {
                    $args[is_string($k) ? ltrim($k, '$') : $k] = $resolve($v);
                }
                $this->assertSame([], array_diff(array_keys($def), ['class', 'factory', 'arguments']), $id);
                $class = $def['class'] ?? $id;
                return $built[$id] = isset($def['factory']) ? ($def['factory'])(...$args) : new $class(...$args);
            };
            $factory = $service(RlserverLimiterFactory::class . ' $anonymousApiLimiter');
            $this->assertInstanceOf(RlserverLimiterFactory::class, $factory);
            return $factory->create('203.0.113.7');
        };
        $limiter = $load(self::$server->port);
        foreach ([99, 98] as $want) {
            $rl = $limiter->consume();
            $this->assertTrue($rl->isAccepted());
            $this->assertSame($want, $rl->getRemainingTokens());
            $this->assertSame(100, $rl->getLimit());
        }
        $this->assertSame(1, $this->redis->exists($name . '-203.0.113.7'));
        $down = new Server();
        $port = $down->port;
        $down->stop();
        $rl = $load($port)->consume();
        $this->assertTrue($rl->isAccepted()); // FailureMode::Open, from the YAML
        $this->assertSame(100, $rl->getRemainingTokens());
    }

    /** The test command is the one scripts/test.sh runs. */
    public function testTestsBlock(): void
    {
        $this->assertSame("cd sdk/php && phpunit\n", self::blocks()[self::TESTS][1]);
        $this->assertStringContainsString("(cd sdk/php && phpunit)\n", (string) file_get_contents(__DIR__ . '/../../../scripts/test.sh'));
    }
}
