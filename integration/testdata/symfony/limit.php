<?php
// Symfony's RateLimiter (Debian's php-symfony-rate-limiter 5.4), unchanged,
// with its CacheStorage on a Symfony Cache RedisAdapter pool (phpredis),
// driven by integration/symfony_test.go against rlserver and redis-server.
//
//   php limit.php SYMFONY_CACHE_DIR HOST:PORT PHASE LIMITER[,LIMITER...]
//
// SYMFONY_CACHE_DIR holds Debian's php-symfony-cache and the packages its
// autoloader requires, unpacked by scripts/setup.sh (not installed: that
// would remove the php-psr extension, which php-symfony-service-contracts
// Breaks). With the extension loaded, the unpacked Psr\Cache and
// Psr\Container files are never read: the extension declares those
// interfaces and Debian's autoloaders only look for classes not yet
// declared.
//
// The limiters are named in $configs below. PHASE "consume": for each
// limiter, consume the token counts of $steps one after the other. PHASE
// "again", in a second process on the state the first left: one more
// consume (refused, the state was read back), reset(), one consume
// (accepted), hasItem() on the pool, then clear() the pool.
//
// Every outcome is one JSON object a line; "retry_in" (RateLimit's
// retryAfter minus the time of the call, in seconds) depends on the clock
// and is not compared between servers.

error_reporting(E_ALL);
set_error_handler(function (int $no, string $msg, string $file, int $line) {
    throw new ErrorException($msg, 0, $no, $file, $line);
});

if ($argc !== 5) {
    fwrite(STDERR, "usage: php limit.php SYMFONY_CACHE_DIR HOST:PORT consume|again LIMITER[,LIMITER...]\n");
    exit(2);
}
[, $cacheDir, $addr, $phase, $names] = $argv;

require_once $cacheDir . '/Symfony/Component/Cache/autoload.php';
require_once '/usr/share/php/Symfony/Component/RateLimiter/autoload.php';
require_once '/usr/share/php/Symfony/Component/Lock/autoload.php';

use Symfony\Component\Cache\Adapter\RedisAdapter;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\RateLimiter\RateLimit;
use Symfony\Component\RateLimiter\RateLimiterFactory;
use Symfony\Component\RateLimiter\Storage\CacheStorage;

function out(array $row): void
{
    echo json_encode($row, JSON_UNESCAPED_SLASHES), "\n";
}

function outcome(string $limiter, string $step, int $tokens, RateLimit $r, float $at): void
{
    out([
        'limiter' => $limiter,
        'step' => $step,
        'tokens' => $tokens,
        'accepted' => $r->isAccepted(),
        'remaining' => $r->getRemainingTokens(),
        'limit' => $r->getLimit(),
        'retry_in' => (int) $r->getRetryAfter()->format('U') - (int) floor($at),
    ]);
}

$redis = RedisAdapter::createConnection('redis://' . $addr);
$pool = new RedisAdapter($redis, 'rl');
$storage = new CacheStorage($pool);

// Intervals of an hour: nothing refills or slides while the test runs.
$configs = [
    'fixed_window' => ['policy' => 'fixed_window', 'limit' => 5, 'interval' => '1 hour'],
    'sliding_window' => ['policy' => 'sliding_window', 'limit' => 5, 'interval' => '1 hour'],
    'token_bucket' => ['policy' => 'token_bucket', 'limit' => 5, 'rate' => ['interval' => '1 hour', 'amount' => 1]],
    // The token bucket again, serialized by a lock in Redis (symfony/lock's
    // RedisStore: Lua scripts on a sorted set), as framework.rate_limiter
    // does with its lock_factory.
    'token_bucket_locked' => ['policy' => 'token_bucket', 'limit' => 5, 'rate' => ['interval' => '1 hour', 'amount' => 1]],
];
$limiters = [];
foreach (explode(',', $names) as $name) {
    $config = $configs[$name] ?? null;
    if ($config === null) {
        fwrite(STDERR, "unknown limiter $name\n");
        exit(2);
    }
    $lockFactory = $name === 'token_bucket_locked' ? new LockFactory(new RedisStore($redis)) : null;
    $factory = new RateLimiterFactory(['id' => $name] + $config, $storage, $lockFactory);
    $limiters[$name] = $factory->create('client');
}

// Accepted, accepted, accepted, refused (1 left, 2 asked), accepted (the
// last one), refused (none left), refused.
$steps = [1, 2, 1, 2, 1, 1, 1];

switch ($phase) {
case 'consume':
    foreach ($limiters as $name => $limiter) {
        foreach ($steps as $i => $tokens) {
            $at = microtime(true);
            outcome($name, "consume$i", $tokens, $limiter->consume($tokens), $at);
        }
    }
    break;
case 'again':
    foreach ($limiters as $name => $limiter) {
        $at = microtime(true);
        outcome($name, 'again', 1, $limiter->consume(1), $at);
        $limiter->reset();
        $at = microtime(true);
        outcome($name, 'after-reset', 1, $limiter->consume(1), $at);
        // CacheStorage's item key: the sha1 of the limiter's id.
        out(['limiter' => $name, 'step' => 'has-item', 'has' => $pool->hasItem(sha1("$name-client"))]);
    }
    out(['step' => 'clear', 'cleared' => $pool->clear()]);
    foreach ($limiters as $name => $limiter) {
        out(['limiter' => $name, 'step' => 'has-item-after-clear', 'has' => $pool->hasItem(sha1("$name-client"))]);
    }
    break;
default:
    fwrite(STDERR, "unknown phase $phase\n");
    exit(2);
}
