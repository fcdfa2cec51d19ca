<?php

declare(strict_types=1);

// The tests run against a real rlserver: $RLSERVER_BIN, or one built here
// from the repository (go build ./cmd/rlserver) into a temporary directory.

require __DIR__ . '/../src/autoload.php';
require __DIR__ . '/Server.php';
require __DIR__ . '/ServerTestCase.php';
require __DIR__ . '/PhpServer.php';
// Symfony RateLimiter for the adapter's tests: Composer's, else Debian's
// (php-symfony-rate-limiter, which scripts/setup.sh installs).
// Nyholm's PSR-7 messages for the PSR-15 middleware's, likewise
// (php-nyholm-psr7); the PSR-15 interfaces come from Composer or the php-psr
// extension; symfony/yaml for the README's services.yaml (php-symfony-yaml).
if (is_file(__DIR__ . '/../vendor/autoload.php')) {
    require __DIR__ . '/../vendor/autoload.php';
} else {
    foreach (['/usr/share/php/Symfony/Component/RateLimiter/autoload.php', '/usr/share/php/Nyholm/Psr7/autoload.php',
        '/usr/share/php/Symfony/Component/Yaml/autoload.php'] as $f) {
        if (is_file($f)) {
            require $f;
        }
    }
}

if (!extension_loaded('redis')) {
    fwrite(STDERR, "the tests need phpredis (Debian: php-redis)\n");
    exit(1);
}

$bin = getenv('RLSERVER_BIN');
if ($bin === false || $bin === '') {
    $dir = sys_get_temp_dir() . '/rlserver-sdk-php-' . getmypid();
    @mkdir($dir, 0700, true);
    $bin = $dir . '/rlserver';
    $root = dirname(__DIR__, 3);
    $cmd = 'cd ' . escapeshellarg($root) . ' && go build -o ' . escapeshellarg($bin) . ' ./cmd/rlserver 2>&1';
    exec($cmd, $out, $rc);
    if ($rc !== 0) {
        fwrite(STDERR, "building rlserver failed:\n" . implode("\n", $out) . "\n");
        exit(1);
    }
    register_shutdown_function(static function () use ($dir, $bin): void {
        @unlink($bin);
        @rmdir($dir);
    });
}
Rlserver\Tests\Server::$bin = $bin;
