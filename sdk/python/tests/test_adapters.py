"""The failure policy (server down before the first request, a wrong
password), Flask-Limiter on storage_uri="rlserver://" under 50 concurrent
requests, and the README's example app."""
import asyncio
import logging
import re
import time
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis

import rlserver.limits_storage  # noqa: F401  registers rlserver://
from rlserver import Client, LimitedError

from conftest import EPOCH_MS

HERE = Path(__file__).resolve().parent


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def test_down_before_first_request_each_mode():
    events = []
    c = Client.from_url(f"redis://127.0.0.1:{closed_port()}", timeout=0.2, on_error=events.append)
    with pytest.raises(redis.ConnectionError):
        c.token_bucket(5, 1, 1000).allow("k")
    d = c.with_options(failure="open", on_error=events.append).token_bucket(5, 1, 1000).allow("k")
    assert (d.allowed, d.limit, d.remaining, d.fallback) == (True, 5, 5, True)
    d = c.with_options(failure="closed").window("fixed", 3, 60000).allow("k")
    assert (d.allowed, d.retry_after_ms, d.fallback) == (False, 1000, True)
    local = c.with_options(failure="local").window("fixed", 3, 60000)
    assert [local.allow("k").allowed for _ in range(4)] == [True, True, True, False]
    assert [e.mode for e in events] == ["open"]


def test_wrong_password_is_loud(start_server, caplog):
    srv = start_server("--requirepass", "secret")
    for url in (f"redis://:wrong@127.0.0.1:{srv.port}", srv.url):
        events = []
        c = Client.from_url(url, timeout=1, failure="open", on_error=events.append)
        with caplog.at_level(logging.ERROR, logger="rlserver"):
            with pytest.raises(redis.RedisError, match="WRONGPASS|NOAUTH|invalid|Authentication"):
                c.token_bucket(5, 1, 1000).allow("k")
        assert len(events) == 1 and events[0].config
        assert "configuration error on CL.TOKENBUCKET" in caplog.text
        caplog.clear()


def test_flask_limiter_on_rlserver_storage(server, admin, monkeypatch):
    from flask import Flask
    from flask_limiter import Limiter
    from flask_limiter.util import get_remote_address

    admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 30000)  # 30 s into a minute
    # The headers are computed from the local clock: freeze it at the server's.
    now = [(EPOCH_MS + 30000) / 1000]
    monkeypatch.setattr(time, "time", lambda: now[0])
    app = Flask(__name__)
    limiter = Limiter(get_remote_address, app=app, storage_uri=f"rlserver://127.0.0.1:{server.port}", headers_enabled=True)

    @app.get("/")
    @limiter.limit("10/minute")
    def index():
        return "ok"

    @app.get("/few")
    @limiter.limit("3/minute")
    def few():
        return "ok"

    def hit(_, path="/"):
        with app.test_client() as cl:
            r = cl.get(path)
            return r.status_code, {k: r.headers[k] for k in FL_HEADERS}

    with ThreadPoolExecutor(50) as ex:
        res = list(ex.map(hit, range(50)))
    codes = [c for c, _ in res]
    assert codes.count(200) == 10 and codes.count(429) == 40
    # Flask-Limiter's reset is one second past the window's end (1800000060).
    assert all(h == {"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1800000061", "Retry-After": "31"}
               for c, h in res if c == 429)
    # An admitted response's remaining is read after its hit, as Flask-Limiter
    # does with any storage: under 50 at once, any count from 0 to 9.
    assert {h["X-RateLimit-Reset"] for _, h in res} == {"1800000061"}
    assert {h["X-RateLimit-Remaining"] for c, h in res if c == 200} <= {str(i) for i in range(10)}
    # One at a time, exact.
    got = [hit(0, "/few") for _ in range(4)]
    assert got == [(200, {"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": str(r), "X-RateLimit-Reset": "1800000061", "Retry-After": "31"})
                   for r in (2, 1, 0)] + [(429, {"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1800000061", "Retry-After": "31"})]
    keys = admin.keys("*")
    assert len(keys) == 2 and all(k.startswith(b"rl:limits:LIMITER/") for k in keys)
    admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 30000)  # the window's end resets it
    now[0] += 30
    assert hit(0) == (200, {"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "X-RateLimit-Reset": "1800000121", "Retry-After": "61"})
    limiter.reset()
    assert admin.keys("*") == []


FL_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After")


def test_moving_window_storage(server, admin):
    from limits import parse
    from limits.storage import storage_from_string
    from limits.strategies import MovingWindowRateLimiter

    storage = storage_from_string(f"rlserver://127.0.0.1:{server.port}")  # the strategy holds it weakly
    mw = MovingWindowRateLimiter(storage)
    item = parse("3/minute")
    assert [mw.hit(item, "u") for _ in range(4)] == [True, True, True, False]
    reset, remaining = mw.get_window_stats(item, "u")
    assert remaining == 0
    admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 60000)
    assert mw.hit(item, "u")


def test_readme_example(server, admin, monkeypatch):
    readme = (HERE.parent / "README.md").read_text()
    block = re.search(r"## Protect an HTTP endpoint.*?```python\n(.*?)```", readme, re.S).group(1)
    src = (HERE.parent / "example" / "app.py").read_text()
    assert block == src and len(src.strip().splitlines()) < 20
    monkeypatch.setenv("RLSERVER_URL", server.url)
    ns = {"__name__": "example_app"}
    exec(compile(src, "example/app.py", "exec"), ns)
    cl = ns["app"].test_client()
    codes = [cl.get("/").status_code for _ in range(21)]
    assert codes == [200] * 20 + [429]
    r = cl.get("/")
    assert r.headers["RateLimit"] == '"default";r=0;t=2'
    assert r.headers["RateLimit-Policy"] == '"default";q=20;w=2'
    assert r.headers["Retry-After"] == "1"
    assert admin.keys("*") == [b"rl:default:tokenbucket:127.0.0.1"]


def test_hold_releases_and_denies(server, admin):
    conc = Client(redis.Redis.from_url(server.url)).concurrency(1, 60000)
    with conc.hold("h") as lease:
        assert lease.id != "" and admin.exists("h") == 1
        with pytest.raises(LimitedError) as denied:
            with conc.hold("h"):
                pass
        d = denied.value.decision
        assert (d.allowed, d.limit, d.remaining, d.retry_after_ms, d.reset_after_ms) == (False, 1, 0, 60000, 60000)
    assert admin.exists("h") == 0  # released on the way out
    with pytest.raises(RuntimeError, match="boom"):
        with conc.hold("h"):
            raise RuntimeError("boom")
    assert admin.exists("h") == 0  # and when the block raises


def test_wsgi_middleware_holds_a_lease_until_closed_and_costs(server, admin):
    from flask import Flask
    from rlserver.wsgi import RateLimitMiddleware

    c = Client(redis.Redis.from_url(server.url))
    app = Flask(__name__)
    inside = []

    @app.get("/")
    def index():
        # While this request holds the only lease, another is denied.
        inside.append(admin.exists("rl:default:concurrency:127.0.0.1"))
        inside.append(app.test_client().get("/").status_code)
        return "ok"
    app.wsgi_app = RateLimitMiddleware(app.wsgi_app, c.concurrency(1, 60000))
    r = app.test_client().get("/")
    assert (r.status_code, r.headers["RateLimit"], inside) == (200, '"default";r=0;t=60', [1, 429])
    assert admin.exists("rl:default:concurrency:127.0.0.1") == 1  # held until the server closes the response
    r.close()
    assert admin.exists("rl:default:concurrency:127.0.0.1") == 0

    costly = Flask("costly")
    costly.get("/")(lambda: "ok")
    costly.wsgi_app = RateLimitMiddleware(costly.wsgi_app, c.token_bucket(3, 1, 1000), cost=lambda environ: 2)
    got = [(x.status_code, x.headers["RateLimit"]) for x in (costly.test_client().get("/"), costly.test_client().get("/"))]
    assert got == [(200, '"default";r=1;t=2'), (429, '"default";r=1;t=2')]


def test_elastic_expiry_is_refused(server):
    from limits import parse
    from limits.aio.strategies import FixedWindowElasticExpiryRateLimiter as AsyncElastic
    from limits.storage import storage_from_string
    from limits.strategies import FixedWindowElasticExpiryRateLimiter

    storage = storage_from_string(f"rlserver://127.0.0.1:{server.port}")
    with pytest.raises(NotImplementedError, match="fixed-window-elastic-expiry"):
        FixedWindowElasticExpiryRateLimiter(storage).hit(parse("3/minute"), "u")

    async def main():
        s = storage_from_string(f"async+rlserver://127.0.0.1:{server.port}")
        try:
            with pytest.raises(NotImplementedError, match="fixed-window-elastic-expiry"):
                await AsyncElastic(s).hit(parse("3/minute"), "u")
        finally:
            await s.redis.close()
    asyncio.run(main())
