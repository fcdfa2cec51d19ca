<?php

declare(strict_types=1);

namespace Rlserver\Tests;

use PHPUnit\Framework\TestCase;
use Rlserver\BaseLimiter;
use Rlserver\Client;
use Rlserver\Decision;
use Rlserver\Headers;
use Rlserver\Lease;
use Rlserver\Rule;
use Rlserver\ServerException;
use Rlserver\WindowMode;

/**
 * The shared conformance cases (sdk/conformance/cases.json, described in its
 * README) run through the typed limiters against a real server, as
 * sdk/go/conformance_test.go does.
 */
final class ConformanceTest extends TestCase
{
    private const CASES = __DIR__ . '/../../conformance/cases.json';

    private static function path(): string
    {
        $p = getenv('CONFORMANCE_CASES');
        return ($p === false || $p === '') ? self::CASES : $p;
    }
    private const HEADER_NAMES = ['RateLimit', 'RateLimit-Policy', 'Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];

    private static ?Server $server = null;

    public static function setUpBeforeClass(): void
    {
        self::$server = new Server();
    }

    public static function tearDownAfterClass(): void
    {
        self::$server?->stop();
        self::$server = null;
    }

    /** @return array<string, array{array<string, mixed>, int, string}> */
    public static function cases(): array
    {
        $f = json_decode((string) file_get_contents(self::path()), true, 512, JSON_THROW_ON_ERROR);
        if ($f['format'] !== 1 || $f['cases'] === []) {
            throw new \RuntimeException('unexpected cases file');
        }
        $out = [];
        foreach ($f['cases'] as $c) {
            $out[$c['name']] = [$c, $f['start_unix_ms'], $f['policy']];
        }
        return $out;
    }

    public function testCasesFileIsComplete(): void
    {
        // Every case runs: the data provider is this file's cases, all of them.
        $f = json_decode((string) file_get_contents(self::path()), true, 512, JSON_THROW_ON_ERROR);
        $this->assertCount(count($f['cases']), self::cases());
        $this->assertGreaterThan(10, count($f['cases']));
    }

    /**
     * @dataProvider cases
     * @param array<string, mixed> $case
     */
    public function testCase(array $case, int $startMs, string $policy): void
    {
        $redis = self::$server->redis();
        $this->assertTrue($redis->flushAll());
        Server::setClock($redis, $startMs);
        $c = new Client($redis);
        $lease = '';
        foreach ($case['steps'] as $si => $st) {
            if (array_key_exists('advance_ms', $st)) {
                Server::advance($redis, $st['advance_ms']);
                continue;
            }
            $cmd = array_map(static fn (string $a): string => str_replace('$lease', $lease, $a), $st['command']);
            $got = $this->runStep($c, $policy, $cmd, $lease);
            $want = $st;
            unset($want['command']);
            ksort($want);
            ksort($got);
            $this->assertSame(
                json_encode($want),
                json_encode($got),
                "step $si: " . json_encode($st['command'])
            );
        }
        $redis->close();
    }

    /** @return list<int> */
    private static function ints(Decision $d): array
    {
        return [$d->allowed ? 1 : 0, $d->limit, $d->remaining, $d->never() ? -1 : (int) round($d->retryAfter * 1000), (int) round($d->resetAfter * 1000)];
    }

    /** @return array{Rule, int} a typed rule from a CL.ALL rule's words, and how many words it took */
    private function ruleOf(Client $c, array $w): array
    {
        return match (strtoupper($w[0])) {
            'TOKENBUCKET' => [$c->tokenBucket((int) $w[2], (int) $w[3], $w[4])->rule($w[1]), 5],
            'THROTTLE' => [$c->throttle((int) $w[2], (int) $w[3], $w[4])->rule($w[1]), 5],
            'LEAKYBUCKET' => [$c->leakyBucket((int) $w[2], (int) $w[3], $w[4])->rule($w[1]), 5],
            'FIXED', 'SLIDING', 'LOG' => [$c->window(WindowMode::from(strtoupper($w[0])), (int) $w[2], $w[3])->rule($w[1]), 4],
            'ACQUIRE' => [$c->concurrency((int) $w[2], $w[3])->rule($w[1]), 4],
            default => throw new \RuntimeException("unknown rule {$w[0]}"),
        };
    }

    /**
     * Sends one command through the SDK; the outcome in the file's form.
     *
     * @param list<string> $cmd
     * @return array<string, mixed>
     */
    private function runStep(Client $c, string $policy, array $cmd, string &$lease): array
    {
        $got = [];
        $opt = static fn (int $i, int $def): int => isset($cmd[$i]) ? (int) $cmd[$i] : $def;
        $lim = null;
        $d = null;
        $name = strtoupper($cmd[0]);
        try {
            switch ($name) {
                case 'CL.TOKENBUCKET':
                    $tb = $c->tokenBucket((int) $cmd[2], (int) $cmd[3], $cmd[4]);
                    $lim = $tb;
                    $d = (count($cmd) > 7 && strtoupper($cmd[6]) === 'RESERVE')
                        ? $tb->reserve($cmd[1], (int) $cmd[5], $cmd[7])
                        : $tb->allow($cmd[1], $opt(5, 1));
                    break;
                case 'CL.LEAKYBUCKET':
                    $lim = $c->leakyBucket((int) $cmd[2], (int) $cmd[3], $cmd[4]);
                    $d = $lim->allow($cmd[1], $opt(5, 1));
                    break;
                case 'CL.WINDOW':
                    $mode = count($cmd) > 5 ? WindowMode::from(strtoupper($cmd[5])) : WindowMode::Sliding;
                    $lim = $c->window($mode, (int) $cmd[2], $cmd[3]);
                    $d = $lim->allow($cmd[1], $opt(4, 1));
                    break;
                case 'CL.ACQUIRE':
                    $lim = $c->concurrency((int) $cmd[2], $cmd[3]);
                    $r = $lim->acquire($cmd[1], $opt(4, 1));
                    $d = $r->decision;
                    $got['lease'] = $r->lease !== null;
                    if ($r->lease !== null) {
                        $lease = $r->lease->id;
                    }
                    break;
                case 'CL.ALL':
                    $nr = (int) $cmd[1];
                    $rules = [];
                    $w = array_slice($cmd, 2);
                    for ($i = 0; $i < $nr; $i++) {
                        [$rule, $k] = $this->ruleOf($c, $w);
                        $rules[] = $rule;
                        $w = array_slice($w, $k);
                    }
                    $cost = (count($w) === 2 && strtoupper($w[0]) === 'COST') ? (int) $w[1] : 1;
                    $ad = $c->all($cost, ...$rules);
                    $all = ['allowed' => $ad->allowed ? 1 : 0, 'decisions' => []];
                    foreach ($ad->decisions as $i => $rd) {
                        $all['decisions'][] = self::ints($rd);
                        if ($ad->leases[$i] !== null) {
                            $lease = $ad->leases[$i]->id;
                        }
                    }
                    return ['all' => $all];
                case 'CL.RELEASE':
                    $got['reply'] = Lease::of($c, $cmd[1], $lease)->release() ? 1 : 0;
                    return $got;
                case 'CL.RENEW':
                    $got['reply'] = Lease::of($c, $cmd[1], $lease)->renew($cmd[3]) ? 1 : 0;
                    return $got;
                default: // CL.THROTTLE and GCRA: their own reply, checked as is
                    $got['reply'] = $c->raw($cmd[1], $cmd);
                    return $got;
            }
        } catch (ServerException $e) {
            return ['error' => explode(' ', $e->getMessage())[0]];
        }
        $got['decision'] = self::ints($d);
        $got['headers'] = [];
        $h = Headers::for($policy, $lim->window(), $d, true);
        foreach (self::HEADER_NAMES as $n) {
            if (isset($h[$n])) {
                $got['headers'][$n] = $h[$n];
            }
        }
        $this->assertInstanceOf(BaseLimiter::class, $lim);
        return $got;
    }
}
