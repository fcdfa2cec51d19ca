<?php
// A runnable example: php -S 127.0.0.1:8080 example/index.php, with rlserver
// on 127.0.0.1:6379 (RLSERVER_ADDR=host:port to change it). 10 requests per
// minute per client address; fails open if rlserver is unreachable, from the
// first request on. The README shows this code (ReadmeTest holds them equal
// and runs this file against a server that is down).

declare(strict_types=1);

require __DIR__ . '/../src/autoload.php'; // or Composer's vendor/autoload.php

use Rlserver\{Client, FailureMode, Middleware, Options, WindowMode};

[$host, $port] = explode(':', getenv('RLSERVER_ADDR') ?: '127.0.0.1:6379');
$rl = Client::connect($host, (int) $port, new Options(timeout: 0.1, failure: FailureMode::Open,
    onError: fn ($e) => error_log('rlserver: ' . $e->error->getMessage())));

// 10 requests per sliding minute per client address (keys "rl:default:sliding:<ip>")
$mw = new Middleware($rl->window(WindowMode::Sliding, 10, '1m'), xRateLimit: true);
echo $mw->handle($_SERVER, fn () => "hello\n");
