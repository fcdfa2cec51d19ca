<?php

declare(strict_types=1);

namespace Rlserver\Tests;

use PHPUnit\Framework\TestCase;
use Rlserver\Client;
use Rlserver\WindowMode;

/** The SDK on \RedisCluster, over a two-node static rlserver cluster. */
final class ClusterTest extends TestCase
{
    /** @var list<Server> */
    private array $nodes = [];
    private string $cfg = '';

    protected function tearDown(): void
    {
        foreach ($this->nodes as $n) {
            $n->stop();
        }
        if ($this->cfg !== '' && is_file($this->cfg)) {
            unlink($this->cfg);
        }
    }

    private function startCluster(): \RedisCluster
    {
        for ($attempt = 0; $attempt < 5; $attempt++) {
            $ports = [];
            for ($i = 0; $i < 2; $i++) {
                $ln = stream_socket_server('tcp://127.0.0.1:0');
                $ports[] = (int) explode(':', stream_socket_get_name($ln, false))[1];
                fclose($ln);
            }
            $this->cfg = tempnam(sys_get_temp_dir(), 'rlserver-php-cluster');
            file_put_contents($this->cfg, sprintf('{"version": 1, "shards": [
 {"slots": [[0, 8191]], "primary": {"id": "%040d", "host": "127.0.0.1", "port": %d}, "replicas": []},
 {"slots": [[8192, 16383]], "primary": {"id": "%040d", "host": "127.0.0.1", "port": %d}, "replicas": []}]}', 1, $ports[0], 2, $ports[1]));
            $this->nodes = [];
            try {
                foreach ($ports as $p) {
                    $this->nodes[] = new Server(['--port', (string) $p, '--cluster-config', $this->cfg]);
                }
            } catch (\RuntimeException) {
                $this->tearDown();
                continue; // a port was taken meanwhile: try others
            }
            return new \RedisCluster(null, ['127.0.0.1:' . $ports[0]], 5.0, 5.0);
        }
        $this->fail('could not start a two-node cluster');
    }

    /** The README's Cluster block, run as written with this cluster's seed for its two. */
    public function testReadmeClusterBlock(): void
    {
        $rc = $this->startCluster();
        foreach ($this->nodes as $n) {
            Server::setClock($n->redis(), Server::EPOCH_MS);
        }
        $block = ReadmeBlocksTest::blocks()[ReadmeBlocksTest::CLUSTER][1];
        $seeds = "['10.0.0.1:6379', '10.0.0.2:6379']";
        $this->assertStringContainsString($seeds, $block);
        $password = null;
        for ($want = 9; $want >= 8; $want--) {
            eval('use Rlserver\Client; use Rlserver\WindowMode; ' . str_replace($seeds, "['127.0.0.1:" . $this->nodes[0]->port . "']", $block));
            $this->assertTrue($ad->allowed);
            $this->assertSame([$want, $want + 990], array_map(fn ($x) => $x->remaining, $ad->decisions));
            $this->assertFalse($ad->decisions[0]->fallback);
        }
        $this->assertSame($rc->rawCommand('{user:42}', 'CLUSTER', 'KEYSLOT', '{user:42}:m'), $rc->rawCommand('{user:42}', 'CLUSTER', 'KEYSLOT', '{user:42}:d'));
    }

    public function testCluster(): void
    {
        $rc = $this->startCluster();
        foreach ($this->nodes as $n) {
            Server::setClock($n->redis(), Server::EPOCH_MS);
        }
        $c = new Client($rc);
        $tb = $c->tokenBucket(5, 1, 1);
        foreach (['foo', 'bar'] as $key) { // slots 12182 and 5061: one per node
            foreach ([4, 3] as $i => $want) {
                $d = $tb->allow($key);
                $this->assertTrue($d->allowed, "$key call $i");
                $this->assertSame($want, $d->remaining, "$key call $i");
            }
        }
        $this->assertSame(12182, $rc->rawCommand('foo', 'CLUSTER', 'KEYSLOT', 'foo'));
        $this->assertSame(5061, $rc->rawCommand('bar', 'CLUSTER', 'KEYSLOT', 'bar'));
        // all() over keys of one slot, and a lease released on its node.
        $ad = $c->all(1, $c->tokenBucket(2, 1, 1)->rule('{u}:user'), $c->window(WindowMode::Fixed, 10, 60)->rule('{u}:global'), $c->concurrency(1, 60)->rule('{u}:conc'));
        $this->assertTrue($ad->allowed);
        $this->assertNotNull($ad->leases[2]);
        $this->assertFalse($c->concurrency(1, 60)->acquire('{u}:conc')->decision->allowed);
        $this->assertTrue($ad->leases[2]->release());
        $this->assertSame('ok', $c->concurrency(1, 60)->run('{u}:conc', fn () => 'ok'));
    }
}
