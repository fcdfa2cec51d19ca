"""AsyncClient over redis.asyncio (every kind, reservations, leases, CL.ALL,
the failure policy, configuration errors) and the ASGI middleware in a
Starlette app driven through httpx's ASGI transport: exact decisions, exact
RateLimit fields, the keys written."""
import asyncio
import logging

import httpx
import pytest
import redis
import redis.asyncio
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from rlserver import AsyncClient, Decision, LimitedError
from rlserver.asgi import RateLimitMiddleware

from conftest import closed_port


def ints(d):
    return [1 if d.allowed else 0, d.limit, d.remaining, d.retry_after_ms, d.reset_after_ms]


def run(coro):
    return asyncio.run(coro)


def test_async_limiters_exact(server, admin):
    async def main():
        r = redis.asyncio.Redis.from_url(server.url)
        c = AsyncClient(r, timeout=2)
        try:
            await c.check()
            tb = c.token_bucket(5, 1, 1000)
            assert [ints(await tb.allow("tb")) for _ in range(6)] == [
                [1, 5, 4, 0, 1000], [1, 5, 3, 0, 2000], [1, 5, 2, 0, 3000],
                [1, 5, 1, 0, 4000], [1, 5, 0, 0, 5000], [0, 5, 0, 1000, 5000]]
            assert ints(await tb.reserve("tb", 2, 3000)) == [1, 5, 0, 2000, 7000]
            assert ints(await tb.reserve("tb", 2, 3000)) == [0, 5, 0, 4000, 7000]
            assert ints(await tb.allow("tb", 6)) == [0, 5, 0, -1, 7000]

            fixed = c.window("fixed", 3, 60000)
            assert [ints(await fixed.allow("w")) for _ in range(4)] == [
                [1, 3, 2, 0, 60000], [1, 3, 1, 0, 60000], [1, 3, 0, 0, 60000], [0, 3, 0, 60000, 60000]]
            log_w = c.window("log", 2, 10000)
            assert [(await log_w.allow("l")).allowed for _ in range(3)] == [True, True, False]

            lb = c.leaky_bucket(2, 1, 1000)  # an admitted retry_after is the wait before acting
            assert [ints(await lb.allow("lb")) for _ in range(3)] == [
                [1, 2, 1, 0, 1000], [1, 2, 0, 1000, 2000], [0, 2, 0, 1000, 2000]]

            th = c.throttle(1, 1, 1000)
            assert [ints(await th.allow("th")) for _ in range(3)] == [
                [1, 2, 1, 0, 1000], [1, 2, 0, 0, 2000], [0, 2, 0, 1000, 2000]]

            conc = c.concurrency(1, 60000)
            lease, d = await conc.acquire("c")
            assert lease is not None and lease.id != "" and ints(d) == [1, 1, 0, 0, 60000]
            lease2, d2 = await conc.acquire("c")
            assert lease2 is None and d2.allowed is False
            assert await lease.renew(30000) is True
            assert await lease.release() is True
            assert await lease.release() is False
            lease3, d3 = await conc.acquire("c")
            assert lease3 is not None and d3.allowed
            assert ints(await conc.allow("c")) == ints(d2)

            a, b = c.token_bucket(2, 1, 1000), c.window("fixed", 10, 60000)
            ok, ds, leases = await c.all(1, [a.rule_for("all:a"), b.rule_for("all:b")])
            assert ok and [ints(x) for x in ds] == [[1, 2, 1, 0, 1000], [1, 10, 9, 0, 60000]] and leases == [None, None]
            ok, ds, _ = await c.all(2, [a.rule_for("all:a"), b.rule_for("all:b")])
            assert not ok and ds[0].allowed is False and ds[1].allowed is True
            ok, ds, _ = await c.all(1, [a.rule_for("all:a"), b.rule_for("all:b")])
            assert ok and [x.remaining for x in ds] == [0, 8]  # the denied CL.ALL consumed nothing
        finally:
            await r.close()
    run(main())


def test_async_down_before_first_request_each_mode():
    async def main():
        events = []
        r = redis.asyncio.Redis(host="127.0.0.1", port=closed_port())
        c = AsyncClient(r, timeout=1, on_error=events.append)
        try:
            with pytest.raises(redis.ConnectionError):
                await c.token_bucket(5, 1, 1000).allow("k")
            d = await c.with_options(timeout=1, failure="open", on_error=events.append).token_bucket(5, 1, 1000).allow("k")
            assert d == Decision(True, 5, 5, 0, 0, True)
            d = await c.with_options(timeout=1, failure="closed").window("fixed", 3, 60000).allow("k")
            assert d == Decision(False, 3, 0, 1000, 1000, True)
            local = c.with_options(timeout=1, failure="local").window("fixed", 3, 60000)
            assert [(await local.allow("k")).allowed for _ in range(4)] == [True, True, True, False]
            lease, d = await c.with_options(timeout=1, failure="local").concurrency(1, 1000).acquire("c")
            assert lease is not None and d.fallback
            lease2, d2 = await c.with_options(timeout=1, failure="local").concurrency(1, 1000).acquire("c")
            assert lease2 is None and (d2.allowed, d2.retry_after_ms) == (False, 1000)
            assert await lease.release() is True
            lease3, _ = await c.with_options(timeout=1, failure="local").concurrency(1, 1000).acquire("c")
            assert lease3 is not None
            ok, ds, _ = await c.with_options(timeout=1, failure="closed").all(1, [c.token_bucket(5, 1, 1000).rule_for("k")])
            assert (ok, ds) == (False, [Decision(False, 5, 0, 1000, 1000, True)])
            assert [e.mode for e in events] == ["open"] and events[0].command == "CL.TOKENBUCKET"
        finally:
            await r.close()
    run(main())


def test_async_wrong_password_is_loud(start_server, caplog):
    srv = start_server("--requirepass", "secret")

    async def main(url):
        events = []
        r = redis.asyncio.Redis.from_url(url)
        c = AsyncClient(r, timeout=2, failure="open", on_error=events.append)
        try:
            with caplog.at_level(logging.ERROR, logger="rlserver"):
                with pytest.raises(redis.RedisError, match="WRONGPASS|NOAUTH|invalid|Authentication"):
                    await c.token_bucket(5, 1, 1000).allow("k")
                with pytest.raises(redis.RedisError):
                    await c.check()
        finally:
            await r.close()
        assert [e.config for e in events] == [True, True] and [e.command for e in events] == ["CL.TOKENBUCKET", "PING"]
        assert "configuration error on CL.TOKENBUCKET" in caplog.text
        caplog.clear()
    for url in (f"redis://:wrong@127.0.0.1:{srv.port}", srv.url):
        run(main(url))


async def hello(request):
    return PlainTextResponse("hello\n")


def starlette_app(limiter, **kw):
    app = Starlette(routes=[Route("/", hello)])
    app.add_middleware(RateLimitMiddleware, limiter=limiter, **kw)
    return app


def asgi_client(app, ip):
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app, client=(ip, 40000)), base_url="http://test")


FIELDS = ("RateLimit", "RateLimit-Policy", "Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")


def fields(resp):
    return {k: resp.headers[k] for k in FIELDS if k in resp.headers}


def test_asgi_middleware_decisions_and_headers(server, admin):
    async def main():
        r = redis.asyncio.Redis.from_url(server.url)
        c = AsyncClient(r, timeout=2)
        app = starlette_app(c.token_bucket(3, 1, 1000))
        try:
            async with asgi_client(app, "10.1.2.3") as http:
                got = []
                for _ in range(4):
                    resp = await http.get("/")
                    got.append((resp.status_code, resp.text, fields(resp)))
                async with asgi_client(app, "10.9.9.9") as other:
                    resp = await other.get("/")
                    assert (resp.status_code, fields(resp)["RateLimit"]) == (200, '"default";r=2;t=1')
            pol = '"default";q=3;w=3'
            assert got == [
                (200, "hello\n", {"RateLimit": '"default";r=2;t=1', "RateLimit-Policy": pol}),
                (200, "hello\n", {"RateLimit": '"default";r=1;t=2', "RateLimit-Policy": pol}),
                (200, "hello\n", {"RateLimit": '"default";r=0;t=3', "RateLimit-Policy": pol}),
                (429, "rate limit exceeded\n", {"RateLimit": '"default";r=0;t=3', "RateLimit-Policy": pol, "Retry-After": "1"}),
            ]
            assert sorted(admin.keys("*")) == [b"rl:default:tokenbucket:10.1.2.3", b"rl:default:tokenbucket:10.9.9.9"]
            admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 1000)  # one token back; 10.9.9.9's bucket is full again
            async with asgi_client(app, "10.1.2.3") as http:
                resp = await http.get("/")
                assert (resp.status_code, fields(resp)["RateLimit"]) == (200, '"default";r=0;t=3')
                assert (await http.get("/")).status_code == 429
        finally:
            await r.close()
        assert admin.keys("*") == [b"rl:default:tokenbucket:10.1.2.3"]  # a full bucket is not kept
    run(main())


def test_asgi_middleware_policy_prefix_and_x_fields(server, admin):
    async def main():
        r = redis.asyncio.Redis.from_url(server.url)
        c = AsyncClient(r, timeout=2)
        app = starlette_app(c.window("fixed", 2, 60000), policy="api", x_ratelimit=True,
                            key=lambda scope: dict(scope["headers"]).get(b"x-user", b"").decode(),
                            key_prefix="t:")
        try:
            async with asgi_client(app, "10.1.2.3") as http:
                codes = [(await http.get("/", headers={"X-User": "ann"})) for _ in range(3)]
                anon = await http.get("/")  # no key: not limited, no fields
        finally:
            await r.close()
        assert [x.status_code for x in codes] == [200, 200, 429]
        assert fields(codes[0]) == {"RateLimit": '"api";r=1;t=60', "RateLimit-Policy": '"api";q=2;w=60',
                                    "X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "60"}
        assert fields(codes[2]) == {"RateLimit": '"api";r=0;t=60', "RateLimit-Policy": '"api";q=2;w=60', "Retry-After": "60",
                                    "X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "60"}
        assert (anon.status_code, fields(anon)) == (200, {})
        assert admin.keys("*") == [b"t:ann"]
    run(main())


def test_asgi_middleware_server_down(server):
    async def main():
        r = redis.asyncio.Redis(host="127.0.0.1", port=closed_port())
        events = []
        c = AsyncClient(r, timeout=1, on_error=events.append)
        try:
            async with asgi_client(starlette_app(c.token_bucket(3, 1, 1000)), "10.1.2.3") as http:
                resp = await http.get("/")
                assert (resp.status_code, resp.text, fields(resp)) == (503, "rate limiter unavailable\n", {})
            closed = c.with_options(timeout=1, failure="closed", on_error=events.append)
            async with asgi_client(starlette_app(closed.token_bucket(3, 1, 1000)), "10.1.2.3") as http:
                resp = await http.get("/")
                assert (resp.status_code, fields(resp)) == (429, {
                    "RateLimit": '"default";r=0;t=1', "RateLimit-Policy": '"default";q=3;w=3', "Retry-After": "1"})
            opened = c.with_options(timeout=1, failure="open")
            async with asgi_client(starlette_app(opened.token_bucket(3, 1, 1000)), "10.1.2.3") as http:
                resp = await http.get("/")
                assert (resp.status_code, fields(resp)) == (200, {
                    "RateLimit": '"default";r=3;t=0', "RateLimit-Policy": '"default";q=3;w=3'})
        finally:
            await r.close()
        assert [e.mode for e in events] == ["closed"]
    run(main())


def test_async_hold_releases_and_denies(server, admin):
    async def main():
        r = redis.asyncio.Redis.from_url(server.url)
        conc = AsyncClient(r, timeout=2).concurrency(1, 60000)
        try:
            async with conc.hold("h") as lease:
                assert lease.id != "" and admin.exists("h") == 1
                with pytest.raises(LimitedError) as denied:
                    async with conc.hold("h"):
                        pass
                assert ints(denied.value.decision) == [0, 1, 0, 60000, 60000]
            assert admin.exists("h") == 0  # released on the way out
            with pytest.raises(RuntimeError, match="boom"):
                async with conc.hold("h"):
                    raise RuntimeError("boom")
            assert admin.exists("h") == 0  # and when the block raises
            with pytest.raises(TypeError, match="concurrency"):
                AsyncClient(r).token_bucket(5, 1, 1000).hold("h")
        finally:
            await r.close()
    run(main())


def test_asgi_middleware_holds_a_lease_until_answered_and_costs(server, admin):
    async def main():
        r = redis.asyncio.Redis.from_url(server.url)
        c = AsyncClient(r, timeout=2)
        entered, leave = asyncio.Event(), asyncio.Event()

        async def slow(request):
            entered.set()
            await leave.wait()
            return PlainTextResponse("done\n")
        app = Starlette(routes=[Route("/", slow)])
        app.add_middleware(RateLimitMiddleware, limiter=c.concurrency(1, 60000))
        costly = starlette_app(c.token_bucket(3, 1, 1000), cost=lambda scope: 2)
        try:
            async with asgi_client(app, "10.1.2.3") as http:
                first = asyncio.ensure_future(http.get("/"))
                await entered.wait()
                assert admin.exists("rl:default:concurrency:10.1.2.3") == 1
                second = await http.get("/")
                assert (second.status_code, fields(second)) == (429, {
                    "RateLimit": '"default";r=0;t=60', "RateLimit-Policy": '"default";q=1;w=60', "Retry-After": "60"})
                leave.set()
                resp = await first
                assert (resp.status_code, resp.text, fields(resp)["RateLimit"]) == (200, "done\n", '"default";r=0;t=60')
            assert admin.exists("rl:default:concurrency:10.1.2.3") == 0  # released once answered
            async with asgi_client(costly, "10.1.2.3") as http:
                got = [(x.status_code, fields(x)["RateLimit"]) for x in [await http.get("/"), await http.get("/")]]
            assert got == [(200, '"default";r=1;t=2'), (429, '"default";r=1;t=2')]
        finally:
            await r.close()
    run(main())
