<?php

declare(strict_types=1);

namespace Rlserver\Tests;

/** One rlserver process on a free 127.0.0.1 port, in memory, with DEBUG CLOCK enabled. */
final class Server
{
    public static string $bin = '';

    /** The cases' and tests' clock: a multiple of every window they use. */
    public const EPOCH_MS = 1_800_000_000_000;

    /** @var resource */
    private $proc;
    private string $log;
    public readonly string $host;
    public readonly int $port;

    /** @param list<string> $args after the test defaults (default: a free port) */
    public function __construct(array $args = ['--port', '0'])
    {
        $this->log = tempnam(sys_get_temp_dir(), 'rlserver-php-log');
        $cmd = [self::$bin, '--dir', '', '--enable-debug-command', '--bind', '127.0.0.1', ...$args];
        $this->proc = proc_open($cmd, [0 => ['file', '/dev/null', 'r'], 1 => ['file', $this->log, 'a'], 2 => ['file', $this->log, 'a']], $pipes);
        if (!is_resource($this->proc)) {
            throw new \RuntimeException('cannot start rlserver');
        }
        // Poll its log for the address, with a deadline.
        $deadline = microtime(true) + 30;
        while (true) {
            $text = (string) file_get_contents($this->log);
            if (preg_match('/listening on (127\.0\.0\.1):(\d+)/', $text, $m) === 1) {
                $this->host = $m[1];
                $this->port = (int) $m[2];
                return;
            }
            if (!proc_get_status($this->proc)['running']) {
                throw new \RuntimeException("rlserver exited before listening:\n" . $text);
            }
            if (microtime(true) > $deadline) {
                $this->stop();
                throw new \RuntimeException("rlserver did not log its address within 30s:\n" . $text);
            }
            usleep(10_000);
        }
    }

    /** A phpredis connection to this server. */
    public function redis(): \Redis
    {
        $r = new \Redis();
        $r->connect($this->host, $this->port, 5.0);
        return $r;
    }

    /** Kills the server and waits for it to exit, so that its port refuses. */
    public function stop(): void
    {
        if (is_resource($this->proc)) {
            proc_terminate($this->proc, 9);
            proc_close($this->proc);
        }
        if (is_file($this->log)) {
            @unlink($this->log);
        }
    }

    public function __destruct()
    {
        $this->stop();
    }

    public static function setClock(\Redis $r, int $ms): void
    {
        if ($r->rawCommand('DEBUG', 'CLOCK', 'SET', (string) $ms) === false) {
            throw new \RuntimeException('DEBUG CLOCK SET: ' . $r->getLastError());
        }
    }

    public static function advance(\Redis $r, int $ms): void
    {
        if ($r->rawCommand('DEBUG', 'CLOCK', 'ADVANCE', (string) $ms) === false) {
            throw new \RuntimeException('DEBUG CLOCK ADVANCE: ' . $r->getLastError());
        }
    }
}
