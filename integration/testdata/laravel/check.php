<?php
// Runs Laravel 8.83's Redis limiters (Debian's php-illuminate-redis, from
// the php-laravel-framework source, unchanged) against a Redis server and
// prints a transcript, one line per step, for integration/laravel_test.go
// to compare between rlserver and redis-server.
//
// No Laravel application: a RedisManager with no container and the
// 'phpredis' driver builds the PhpRedisConnection (phpredis extension) as
// config/database.php's 'redis' section would, with Laravel's default key
// prefix; then DurationLimiter and ConcurrencyLimiter directly and through
// the connection's throttle() and funnel() builders.
//
// Usage: php check.php <dir> <host:port>
//   <dir>: where scripts/setup.sh unpacked the Debian packages (its
//   Illuminate/Redis/autoload.php and the autoloaders it requires).
// Times are printed relative to now in whole seconds (decays_in=, ttl=);
// the test allows for the time that passes.

use Illuminate\Contracts\Redis\LimiterTimeoutException;
use Illuminate\Redis\Limiters\ConcurrencyLimiter;
use Illuminate\Redis\Limiters\DurationLimiter;
use Illuminate\Redis\RedisManager;

if ($argc !== 3) {
    fwrite(STDERR, "usage: php check.php <dir> <host:port>\n");
    exit(2);
}
[$dir, $addr] = [$argv[1], $argv[2]];
[$host, $port] = explode(':', $addr, 2);

// Debian's autoloaders require each other by include_path-relative paths.
set_include_path($dir . PATH_SEPARATOR . get_include_path());
require 'Illuminate/Redis/autoload.php';

error_reporting(E_ALL);
set_error_handler(function ($no, $str, $file, $line) {
    throw new ErrorException($str, 0, $no, $file, $line);
});

const PREFIX = 'laravel_database_';

$manager = new RedisManager(null, 'phpredis', [
    'options' => ['prefix' => PREFIX],
    'default' => ['host' => $host, 'port' => (int) $port, 'database' => 0, 'timeout' => 10, 'read_timeout' => 10],
]);
$redis = $manager->connection();

function out(string $line): void
{
    echo $line, "\n";
}

function show($v): string
{
    return json_encode($v);
}

// The raw client without the prefix, to look at the keys the limiters leave.
$raw = new Redis();
$raw->connect($host, (int) $port, 10);

function key_state(Redis $raw, string $key): string
{
    $type = $raw->type($key);
    $names = [Redis::REDIS_NOT_FOUND => 'none', Redis::REDIS_STRING => 'string', Redis::REDIS_HASH => 'hash'];
    $s = 'type=' . ($names[$type] ?? "other($type)");
    if ($type === Redis::REDIS_NOT_FOUND) {
        return $s;
    }
    return $s . ' ttl=' . $raw->ttl($key);
}

// --- DurationLimiter: 3 per 60 s. ---
$d = new DurationLimiter($redis, 'dl', 3, 60);
for ($i = 1; $i <= 5; $i++) {
    $ok = $d->acquire();
    out(sprintf('duration acquire%d acquired=%s remaining=%d decays_in=%d', $i, show($ok), $d->remaining, $d->decaysAt - time()));
}
$h = $raw->hGetAll(PREFIX . 'dl');
out(sprintf('duration hash count=%s window=%d %s', $h['count'] ?? 'none', ($h['end'] ?? 0) - ($h['start'] ?? 0), key_state($raw, PREFIX . 'dl')));
$too = $d->tooManyAttempts();
out(sprintf('duration tooManyAttempts=%s remaining=%d decays_in=%d', show($too), $d->remaining, $d->decaysAt - time()));
// A name never used: no key, its script answers {0, now + decay}.
$fresh = new DurationLimiter($redis, 'dl-fresh', 3, 60);
$too = $fresh->tooManyAttempts();
out(sprintf('duration fresh tooManyAttempts=%s decaysAt=%s remaining_in=%d', show($too), show($fresh->decaysAt), $fresh->remaining - time()));
out('duration fresh ' . key_state($raw, PREFIX . 'dl-fresh'));
$d->clear();
out('duration clear ' . key_state($raw, PREFIX . 'dl'));
$ok = $d->acquire();
out(sprintf('duration after-clear acquired=%s remaining=%d decays_in=%d', show($ok), $d->remaining, $d->decaysAt - time()));

// block(0): one try, then LimiterTimeoutException.
$b = new DurationLimiter($redis, 'dl-block', 1, 60);
foreach ([1, 2] as $i) {
    try {
        $r = $b->block(0, function () {
            return 'ran';
        });
        out("duration block$i " . show($r));
    } catch (LimiterTimeoutException $e) {
        out("duration block$i timeout");
    }
}

// A 1 s window: 2 admitted, refused, then a new window after it ends.
// Started just after a second begins, so that block(5)'s first try is
// still in the window.
usleep((int) ((1 - fmod(microtime(true), 1)) * 1e6) + 10000);
$s = new DurationLimiter($redis, 'dl-short', 2, 1);
for ($i = 1; $i <= 3; $i++) {
    $ok = $s->acquire();
    out(sprintf('duration short%d acquired=%s remaining=%d', $i, show($ok), $s->remaining));
}
// block(5) polls every 750 ms until the window has passed.
$started = microtime(true);
$r = $s->block(5, function () {
    return 'ran';
});
$waited = microtime(true) - $started;
out('duration short block(5) ' . show($r) . ' waited=' . ($waited > 0.5 && $waited < 4 ? 'yes' : sprintf('%.3fs', $waited)));

// The connection's builder, as Redis::throttle('key')->allow(2)->every(60).
foreach ([1, 2, 3] as $i) {
    $r = $redis->throttle('dl-builder')->allow(2)->every(60)->block(0)->then(function () {
        return 'ran';
    }, function ($e) {
        return 'failed: ' . get_class($e);
    });
    out("duration builder$i $r");
}

// --- ConcurrencyLimiter: 2 slots, released after 60 s. ---
$c = new ConcurrencyLimiter($redis, 'cl', 2, 60);
$r = $c->block(0, function () use ($c, $raw) {
    out('concurrency outer holds ' . key_state($raw, PREFIX . 'cl1') . ' / ' . key_state($raw, PREFIX . 'cl2'));
    return $c->block(0, function () use ($c, $raw) {
        out('concurrency middle holds ' . key_state($raw, PREFIX . 'cl1') . ' / ' . key_state($raw, PREFIX . 'cl2'));
        try {
            $c->block(0, function () {
                return 'ran';
            });
            return 'inner ran';
        } catch (LimiterTimeoutException $e) {
            return 'inner timeout';
        }
    });
});
out('concurrency nested ' . show($r));
out('concurrency released ' . key_state($raw, PREFIX . 'cl1') . ' / ' . key_state($raw, PREFIX . 'cl2'));

// A callback that throws gives its slot back, and the exception goes on.
try {
    $c->block(0, function () {
        throw new RuntimeException('boom');
    });
    out('concurrency throw: no exception');
} catch (RuntimeException $e) {
    out('concurrency throw ' . $e->getMessage() . ' ' . key_state($raw, PREFIX . 'cl1'));
}

// block() without a callback keeps the slot until it expires.
$held = new ConcurrencyLimiter($redis, 'cl-held', 2, 60);
foreach ([1, 2, 3] as $i) {
    try {
        out("concurrency held$i " . show($held->block(0)));
    } catch (LimiterTimeoutException $e) {
        out("concurrency held$i timeout");
    }
}
out('concurrency held ' . key_state($raw, PREFIX . 'cl-held1') . ' / ' . key_state($raw, PREFIX . 'cl-held2'));

// One slot held for 1 s: block(5) polls every 250 ms until it expires.
$brief = new ConcurrencyLimiter($redis, 'cl-brief', 1, 1);
out('concurrency brief1 ' . show($brief->block(0)));
$started = microtime(true);
$r = $brief->block(5, function () {
    return 'ran';
});
$waited = microtime(true) - $started;
out('concurrency brief2 block(5) ' . show($r) . ' waited=' . ($waited > 0.2 && $waited < 4 ? 'yes' : sprintf('%.3fs', $waited)));

// The connection's builder, as Redis::funnel('key')->limit(1).
$r = $redis->funnel('cl-builder')->limit(1)->releaseAfter(60)->block(0)->then(function () use ($redis) {
    return 'outer ran, ' . $redis->funnel('cl-builder')->limit(1)->releaseAfter(60)->block(0)->then(function () {
        return 'inner ran';
    }, function ($e) {
        return 'inner failed: ' . get_class($e);
    });
});
out("concurrency builder $r");
out('concurrency builder ' . key_state($raw, PREFIX . 'cl-builder1'));
