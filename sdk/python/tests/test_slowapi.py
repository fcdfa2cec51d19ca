"""What slowapi (FastAPI/Starlette) does with storage_uri="rlserver://...".
slowapi is not installable here (Debian has no package; PyPI is out of
reach), so these tests make the calls slowapi's Limiter makes, in a Starlette
app: limits' storage_from_string(storage_uri, **storage_options); one of
limits' *sync* strategies by name (slowapi takes limits.strategies.STRATEGIES,
never limits.aio: an async+rlserver:// storage is not for slowapi); per
request hit(item, key, scope) with the client address and the path; its
headers from get_window_stats (X-RateLimit-Reset is 1 + the window's reset,
Retry-After that minus now, on every response); a 429 when a hit is denied;
check() when it looks for a storage that came back; reset(). Sync endpoints,
as Starlette runs them in its thread pool: 50 requests at once."""
import asyncio
import time

import httpx
import pytest
import redis
from limits import parse
from limits.storage import storage_from_string
from limits.strategies import STRATEGIES
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

import rlserver.limits_storage  # noqa: F401  registers rlserver://

from conftest import EPOCH_MS, closed_port


class SlowapiCalls:
    """The storage and strategy calls of slowapi's Limiter, for a route limited by one limit string."""

    def __init__(self, storage_uri, strategy="fixed-window", **storage_options):
        self.storage = storage_from_string(storage_uri, **storage_options)
        self.limiter = STRATEGIES[strategy](self.storage)

    def limit(self, value, endpoint):
        item = parse(value)

        def route(request):
            args = [request.client.host, request.url.path]
            if self.limiter.hit(item, *args):
                response = endpoint(request)
            else:
                response = JSONResponse({"error": f"Rate limit exceeded: {value}"}, status_code=429)
            reset, remaining = self.limiter.get_window_stats(item, *args)
            reset_in = 1 + reset
            response.headers["X-RateLimit-Limit"] = str(item.amount)
            response.headers["X-RateLimit-Remaining"] = str(remaining)
            response.headers["X-RateLimit-Reset"] = str(reset_in)
            response.headers["Retry-After"] = str(int(reset_in - time.time()))
            return response
        return route


HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After")


def ok(request):
    return PlainTextResponse("ok")


async def burst(app, path, n, ip="10.0.0.1"):
    transport = httpx.ASGITransport(app=app, client=(ip, 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        rs = await asyncio.gather(*[http.get(path) for _ in range(n)])
    return [(r.status_code, {k: r.headers[k] for k in HEADERS}) for r in rs]


@pytest.fixture
def frozen(monkeypatch):
    """time.time frozen at the server's clock (EPOCH_MS + 30 s), moved by hand:
    the headers are computed from the local clock."""
    now = [(EPOCH_MS + 30000) / 1000]
    monkeypatch.setattr(time, "time", lambda: now[0])
    return now


def test_slowapi_fixed_window(server, admin, frozen):
    admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 30000)  # 30 s into a minute
    s = SlowapiCalls(f"rlserver://127.0.0.1:{server.port}", socket_timeout=1)  # storage_options reach redis-py
    app = Starlette(routes=[Route("/", s.limit("10/minute", ok)), Route("/few", s.limit("3/minute", ok))])
    res = asyncio.run(burst(app, "/", 50))
    codes = [c for c, _ in res]
    assert codes.count(200) == 10 and codes.count(429) == 40
    assert all(h == {"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1800000061", "Retry-After": "31"}
               for c, h in res if c == 429)
    # An admitted response's remaining is read after its hit, as slowapi does
    # with any storage: under 50 at once, any count from 0 to 9.
    assert {h["X-RateLimit-Remaining"] for c, h in res if c == 200} <= {str(i) for i in range(10)}
    assert {h["X-RateLimit-Reset"] for _, h in res} == {"1800000061"}
    got = [asyncio.run(burst(app, "/few", 1))[0] for _ in range(4)]  # one at a time: exact
    assert got == [(200, {"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": str(r), "X-RateLimit-Reset": "1800000061", "Retry-After": "31"})
                   for r in (2, 1, 0)] + [(429, {"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1800000061", "Retry-After": "31"})]
    assert sorted(admin.keys("*")) == [b"rl:limits:LIMITER/10.0.0.1///10/1/minute", b"rl:limits:LIMITER/10.0.0.1//few/3/1/minute"]
    assert asyncio.run(burst(app, "/", 1, ip="10.0.0.2"))[0][0] == 200  # another client, its own count

    admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 30000)  # the window's end resets it
    frozen[0] += 30
    assert asyncio.run(burst(app, "/", 1)) == [
        (200, {"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "X-RateLimit-Reset": "1800000121", "Retry-After": "61"})]
    assert s.storage.check() is True
    assert s.storage.reset() == 1  # slowapi's Limiter.reset(); the other keys ended with their window
    assert admin.keys("*") == []


def test_slowapi_moving_window(server, admin, frozen):
    admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 30000)
    s = SlowapiCalls(f"rlserver://127.0.0.1:{server.port}", strategy="moving-window")
    app = Starlette(routes=[Route("/", s.limit("3/minute", ok))])
    res = asyncio.run(burst(app, "/", 50))
    assert [c for c, _ in res].count(200) == 3
    # The reset is when the newest entry leaves, plus slowapi's second.
    assert all(h == {"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1800000091", "Retry-After": "61"}
               for c, h in res if c == 429)
    admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 30000)
    frozen[0] += 30
    assert asyncio.run(burst(app, "/", 1))[0][0] == 429  # a moving window: nothing has left yet
    admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 30000)
    frozen[0] += 30
    assert asyncio.run(burst(app, "/", 1)) == [
        (200, {"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": "2", "X-RateLimit-Reset": "1800000151", "Retry-After": "61"})]


def test_slowapi_storage_down():
    """slowapi's in-memory fallback asks check(); without one, the hit's error reaches it."""
    s = SlowapiCalls(f"rlserver://127.0.0.1:{closed_port()}", socket_connect_timeout=1)
    assert s.storage.check() is False
    with pytest.raises(redis.ConnectionError):
        s.limiter.hit(parse("1/second"), "10.0.0.1", "/")
