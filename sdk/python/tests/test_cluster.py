"""The limiters over redis-py's cluster clients (redis.cluster.RedisCluster and
redis.asyncio.cluster.RedisCluster) on a real two-node static rlserver
cluster: keys routed to both primaries, CL.ALL under one hash tag, leases
released on their node, CROSSSLOT without a tag."""
import asyncio
import json

import pytest
import redis
import redis.asyncio.cluster
from redis.cluster import RedisCluster
from redis.crc import key_slot
from redis.exceptions import RedisClusterException

from rlserver import AsyncClient, Client

from conftest import EPOCH_MS, Server, closed_port


@pytest.fixture
def cluster(rlserver_bin, tmp_path):
    """Two primaries splitting the slots (--cluster-config); [node for slots 0-8191, node for 8192-16383]."""
    for _ in range(5):  # a port picked free may be taken before the server binds it: pick again
        ports = [closed_port(), closed_port()]
        cfg = tmp_path / "cluster.json"
        cfg.write_text(json.dumps({"version": 1, "shards": [
            {"slots": [[0, 8191]], "primary": {"id": "%040d" % 1, "host": "127.0.0.1", "port": ports[0]}, "replicas": []},
            {"slots": [[8192, 16383]], "primary": {"id": "%040d" % 2, "host": "127.0.0.1", "port": ports[1]}, "replicas": []}]}))
        nodes = []
        try:
            for p in ports:
                nodes.append(Server(rlserver_bin, "--port", str(p), "--cluster-config", str(cfg)))
        except RuntimeError:
            for n in nodes:
                n.stop()
            continue
        for n in nodes:
            r = redis.Redis(host="127.0.0.1", port=n.port)
            r.execute_command("DEBUG", "CLOCK", "SET", EPOCH_MS)
            r.close()
        yield nodes
        for n in nodes:
            n.stop()
        return
    raise RuntimeError("could not start a two-node cluster")


def node_keys(nodes):
    out = []
    for n in nodes:
        r = redis.Redis(host="127.0.0.1", port=n.port)
        out.append(sorted(r.execute_command("KEYS", "*")))
        r.close()
    return out


def ints(d):
    return [1 if d.allowed else 0, d.limit, d.remaining, d.retry_after_ms, d.reset_after_ms]


def test_slots():
    assert (key_slot(b"foo"), key_slot(b"bar"), key_slot(b"{u}:a") == key_slot(b"u")) == (12182, 5061, True)


def test_sync_cluster(cluster):
    rc = RedisCluster(host="127.0.0.1", port=cluster[0].port, socket_timeout=2, socket_connect_timeout=2)
    try:
        c = Client(rc)
        c.check()
        tb = c.token_bucket(5, 1, 1000)
        for key in ("foo", "bar"):
            assert [ints(tb.allow(key)) for _ in range(2)] == [[1, 5, 4, 0, 1000], [1, 5, 3, 0, 2000]]
        assert node_keys(cluster) == [[b"bar"], [b"foo"]]

        rules = [c.token_bucket(2, 1, 1000).rule_for("{u}:user"), c.window("fixed", 10, 60000).rule_for("{u}:global"),
                 c.concurrency(1, 60000).rule_for("{u}:conc")]
        ok, ds, leases = c.all(1, rules)
        assert ok and [ints(d) for d in ds] == [[1, 2, 1, 0, 1000], [1, 10, 9, 0, 60000], [1, 1, 0, 0, 60000]]
        assert leases[0] is None and leases[1] is None and leases[2] is not None
        ok2, ds2, _ = c.all(1, rules)
        assert not ok2 and [d.allowed for d in ds2] == [True, True, False]
        assert leases[2].release() is True
        assert c.all(1, rules)[0] is True

        lease, d = c.concurrency(1, 60000).acquire("foo:conc")  # slot 8460: the second node
        assert lease is not None and lease.renew(1000) is True and lease.release() is True
        with pytest.raises(RedisClusterException, match="all keys must map to the same key slot"):
            c.all(1, [tb.rule_for("foo"), tb.rule_for("bar")])
        with pytest.raises(RedisClusterException):  # the caller's error: no failure mode answers it
            c.with_options(failure="open").all(1, [tb.rule_for("foo"), tb.rule_for("bar")])
        assert node_keys(cluster)[0] == [b"bar"]
        assert node_keys(cluster)[1] == sorted([b"foo", b"{u}:user", b"{u}:global", b"{u}:conc"])
    finally:
        rc.close()


def test_async_cluster(cluster):
    async def main():
        rc = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=cluster[1].port)
        try:
            c = AsyncClient(rc, timeout=2)
            await c.check()
            tb = c.token_bucket(5, 1, 1000)
            for key in ("foo", "bar"):
                assert [ints(await tb.allow(key)) for _ in range(2)] == [[1, 5, 4, 0, 1000], [1, 5, 3, 0, 2000]]
            conc = c.concurrency(1, 60000)
            rules = [c.window("fixed", 1, 60000).rule_for("{b}:w"), conc.rule_for("{b}:c")]
            ok, ds, leases = await c.all(1, rules)
            assert ok and leases[1] is not None
            assert (await c.all(1, rules))[0] is False
            assert await leases[1].release() is True
            with pytest.raises(RedisClusterException, match="all keys must map to the same key slot"):
                await c.with_options(timeout=2, failure="local").all(1, [tb.rule_for("foo"), tb.rule_for("bar")])
        finally:
            await rc.close()
    asyncio.run(main())
    assert node_keys(cluster) == [[b"bar", b"{b}:w"], [b"foo"]]


def test_limits_storage_on_cluster(cluster):
    """rlserver+cluster:// and async+rlserver+cluster://: the limits storages on the cluster,
    keys on both primaries (u1: slot 1755, a: slot 8506), reset() on every primary."""
    from limits import parse
    from limits.aio.strategies import FixedWindowRateLimiter as AsyncFixed
    from limits.storage import storage_from_string
    from limits.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter

    import rlserver.limits_storage  # noqa: F401  registers the schemes

    item = parse("3/minute")
    storage = storage_from_string(f"rlserver+cluster://127.0.0.1:{cluster[0].port}")
    try:
        fw = FixedWindowRateLimiter(storage)
        assert [fw.hit(item, who) for who in ("u1", "a") for _ in range(4)] == [True, True, True, False] * 2
        assert node_keys(cluster) == [[b"rl:limits:LIMITER/u1/3/1/minute"], [b"rl:limits:LIMITER/a/3/1/minute"]]
        assert fw.get_window_stats(item, "a")[1] == 0 and storage.check() is True
        mw = MovingWindowRateLimiter(storage)
        assert [mw.hit(parse("2/minute"), "m") for _ in range(3)] == [True, True, False]
        assert storage.reset() == 3
        assert node_keys(cluster) == [[], []]
    finally:
        storage.redis.close()

    async def main():
        s = storage_from_string(f"async+rlserver+cluster://127.0.0.1:{cluster[1].port}")
        try:
            fw = AsyncFixed(s)
            assert [await fw.hit(item, who) for who in ("u1", "a") for _ in range(4)] == [True, True, True, False] * 2
            assert node_keys(cluster) == [[b"rl:limits:LIMITER/u1/3/1/minute"], [b"rl:limits:LIMITER/a/3/1/minute"]]
            assert await s.reset() == 2
        finally:
            await s.redis.close()
    asyncio.run(main())
    assert node_keys(cluster) == [[], []]
