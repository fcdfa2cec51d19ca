<?php

declare(strict_types=1);

namespace Rlserver\Tests;

use PHPUnit\Framework\TestCase;

/**
 * The README's example is example/index.php, run here under php -S against a
 * server that is down; and FailureMode::Local holds across requests (APCu).
 */
final class ReadmeTest extends TestCase
{
    private static function deadPort(): int
    {
        $srv = new Server();
        $port = $srv->port;
        $srv->stop();
        return $port;
    }

    public function testReadmeExampleIsTheExampleFile(): void
    {
        $readme = (string) file_get_contents(__DIR__ . '/../README.md');
        $h = strpos($readme, '## Protect an HTTP endpoint');
        $this->assertNotFalse($h);
        $from = strpos($readme, "```php\n", $h) + strlen("```php\n");
        $block = substr($readme, $from, strpos($readme, '```', $from) - $from);
        $this->assertStringContainsString($block, (string) file_get_contents(__DIR__ . '/../example/index.php'));
    }

    public function testExampleFailsOpenWithTheServerDown(): void
    {
        $web = new PhpServer(__DIR__ . '/../example/index.php', ['RLSERVER_ADDR' => '127.0.0.1:' . self::deadPort()]);
        [$status, $fields, $body] = $web->get();
        $web->stop();
        $this->assertSame(200, $status);
        $this->assertSame("hello\n", $body);
        $this->assertSame('"default";r=10;t=0', $fields['ratelimit'] ?? null);
    }

    public function testLocalFallbackIsSharedAcrossRequests(): void
    {
        $this->assertTrue(extension_loaded('apcu'), 'the test needs APCu (Debian: php-apcu; scripts/setup.sh installs it)');
        $web = new PhpServer(__DIR__ . '/fixtures/local.php', ['RLSERVER_PORT' => (string) self::deadPort()]);
        $statuses = [];
        $remaining = [];
        for ($i = 0; $i < 12; $i++) {
            [$status, $fields] = $web->get();
            $statuses[] = $status;
            $remaining[] = $fields['ratelimit'] ?? '';
            $this->assertSame('Rlserver\ApcuStore', $fields['x-local-store'] ?? null);
        }
        $web->stop();
        $this->assertSame([200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 429, 429], $statuses);
        $this->assertSame('"default";r=9;t=60', $remaining[0]);
        $this->assertSame('"default";r=0;t=60', $remaining[11]);
    }
}
