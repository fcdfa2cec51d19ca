<?php

declare(strict_types=1);

namespace Rlserver\Tests;

use PHPUnit\Framework\TestCase;
use Rlserver\Client;

/**
 * A test class with a server of its own, emptied and its clock set to
 * Server::EPOCH_MS before each test, and a Client over it.
 */
abstract class ServerTestCase extends TestCase
{
    protected static ?Server $server = null;
    protected \Redis $redis;
    protected Client $c;

    public static function setUpBeforeClass(): void
    {
        self::$server = new Server();
    }

    public static function tearDownAfterClass(): void
    {
        self::$server?->stop();
        self::$server = null;
    }

    protected function setUp(): void
    {
        $this->redis = self::$server->redis();
        $this->redis->flushAll();
        Server::setClock($this->redis, Server::EPOCH_MS);
        $this->c = new Client($this->redis);
    }
}
