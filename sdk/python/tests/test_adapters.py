"""The failure policy (server down before the first request, a wrong
password), Flask-Limiter on storage_uri="rlserver://" under 50 concurrent
requests, and the README's example app."""
import logging
import re
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import redis

import rlserver.limits_storage  # noqa: F401  registers rlserver://
from rlserver import Client

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


def test_flask_limiter_on_rlserver_storage(server, admin):
    from flask import Flask
    from flask_limiter import Limiter
    from flask_limiter.util import get_remote_address

    admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 30000)  # 30 s into a minute
    app = Flask(__name__)
    limiter = Limiter(get_remote_address, app=app, storage_uri=f"rlserver://127.0.0.1:{server.port}", headers_enabled=True)

    @app.get("/")
    @limiter.limit("10/minute")
    def index():
        return "ok"

    def hit(_):
        with app.test_client() as cl:
            r = cl.get("/")
            return r.status_code, dict(r.headers)

    with ThreadPoolExecutor(50) as ex:
        res = list(ex.map(hit, range(50)))
    codes = [c for c, _ in res]
    assert codes.count(200) == 10 and codes.count(429) == 40
    denied = next(h for c, h in res if c == 429)
    assert denied["X-RateLimit-Limit"] == "10"
    assert denied["X-RateLimit-Remaining"] == "0"
    keys = admin.keys("*")
    assert len(keys) == 1 and keys[0].startswith(b"rl:limits:LIMITER/")
    admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 30000)  # the window's end resets it
    assert hit(0)[0] == 200


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
    assert block == src and len(src.strip().splitlines()) <= 20
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
