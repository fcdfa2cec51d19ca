<?php

declare(strict_types=1);

namespace Rlserver\Tests;

/** PHP's built-in web server (php -S) on a free 127.0.0.1 port, serving one script. */
final class PhpServer
{
    /** @var resource */
    private $proc;
    public readonly int $port;

    /** @param array<string, string> $env added to the server's environment */
    public function __construct(string $script, array $env = [])
    {
        for ($attempt = 0; ; $attempt++) {
            $probe = stream_socket_server('tcp://127.0.0.1:0');
            $port = (int) explode(':', stream_socket_get_name($probe, false))[1];
            fclose($probe);
            $this->proc = proc_open([PHP_BINARY, '-S', '127.0.0.1:' . $port, $script],
                [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'a'], 2 => ['file', '/dev/null', 'a']],
                $pipes, null, $env + getenv());
            // Poll until it accepts, with a deadline.
            $deadline = microtime(true) + 10;
            while (microtime(true) < $deadline && proc_get_status($this->proc)['running']) {
                $c = @stream_socket_client('tcp://127.0.0.1:' . $port, $errno, $errstr, 1.0);
                if ($c !== false) {
                    fclose($c);
                    $this->port = $port;
                    return;
                }
                usleep(10_000);
            }
            $this->stop();
            if ($attempt >= 2) {
                throw new \RuntimeException('php -S did not start');
            }
        }
    }

    /** @return array{int, array<string, string>, string} status, fields (lower-case names), body */
    public function get(string $path = '/'): array
    {
        $ctx = stream_context_create(['http' => ['ignore_errors' => true, 'timeout' => 10]]);
        $body = file_get_contents('http://127.0.0.1:' . $this->port . $path, false, $ctx);
        $status = 0;
        $fields = [];
        foreach ($http_response_header as $line) {
            if (preg_match('#^HTTP/\S+ (\d+)#', $line, $m) === 1) {
                $status = (int) $m[1];
            } elseif (str_contains($line, ':')) {
                [$n, $v] = explode(':', $line, 2);
                $fields[strtolower($n)] = trim($v);
            }
        }
        return [$status, $fields, (string) $body];
    }

    public function stop(): void
    {
        if (is_resource($this->proc)) {
            proc_terminate($this->proc, 9);
            proc_close($this->proc);
        }
    }

    public function __destruct()
    {
        $this->stop();
    }
}
