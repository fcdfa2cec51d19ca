"""The async `limits` storage (async+rlserver://) through limits.aio's
strategies, the path an asyncio framework (slowapi with an async+ storage_uri)
takes: fixed window under 50 concurrent hits, costs, the moving window,
window stats, clear, reset and check."""
import asyncio
import time

import pytest
import redis
from limits import parse
from limits.aio.strategies import FixedWindowRateLimiter, MovingWindowRateLimiter
from limits.storage import storage_from_string

from rlserver.limits_storage import AsyncRlserverStorage

from conftest import closed_port


def test_async_fixed_window(server, admin):
    admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 30000)  # 30 s into a minute

    async def main():
        storage = storage_from_string(f"async+rlserver://127.0.0.1:{server.port}")
        assert isinstance(storage, AsyncRlserverStorage)
        try:
            assert await storage.check() is True
            fw = FixedWindowRateLimiter(storage)
            item = parse("10/minute")
            got = await asyncio.gather(*[fw.hit(item, "u") for _ in range(50)])
            assert got.count(True) == 10 and got.count(False) == 40
            assert await fw.test(item, "u") is False
            t0 = time.time()
            reset, remaining = await fw.get_window_stats(item, "u")
            t1 = time.time()
            assert remaining == 0 and int(t0 + 30) <= reset <= int(t1 + 30)
            assert admin.keys("*") == [b"rl:limits:LIMITER/u/10/1/minute"]

            assert [await fw.hit(item, "v", cost=4) for _ in range(3)] == [True, True, False]  # 8, then 12 > 10
            assert await fw.hit(item, "v", cost=2) is True  # the denied hit was not counted
            assert (await fw.get_window_stats(item, "v"))[1] == 0
            await fw.clear(item, "v")
            assert (await fw.get_window_stats(item, "v"))[1] == 10

            admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 30000)  # the window's end resets it
            assert await fw.hit(item, "u") is True
            assert (await fw.get_window_stats(item, "u"))[1] == 9
            assert await storage.reset() == 1
            assert admin.keys("*") == []
        finally:
            await storage.redis.close()
    asyncio.run(main())


def test_async_moving_window(server, admin):
    async def main():
        storage = storage_from_string(f"async+rlserver://127.0.0.1:{server.port}")
        try:
            mw = MovingWindowRateLimiter(storage)
            item = parse("3/minute")
            assert [await mw.hit(item, "u") for _ in range(4)] == [True, True, True, False]
            assert await mw.test(item, "u") is False
            t0 = time.time()
            reset, remaining = await mw.get_window_stats(item, "u")
            t1 = time.time()
            assert remaining == 0 and int(t0) + 60 <= reset <= int(t1) + 60
            admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 30000)
            assert await mw.hit(item, "u") is False  # a moving window: nothing has left yet
            admin.execute_command("DEBUG", "CLOCK", "ADVANCE", 30000)
            assert await mw.hit(item, "u") is True
            assert (await mw.get_window_stats(item, "u"))[1] == 2  # the three of t=0 left; one since
            assert admin.keys("*") == [b"rl:limits:LIMITER/u/3/1/minute"]
        finally:
            await storage.redis.close()
    asyncio.run(main())


def test_async_storage_down():
    async def main():
        storage = storage_from_string(f"async+rlserver://127.0.0.1:{closed_port()}")
        try:
            assert await storage.check() is False
            with pytest.raises(redis.ConnectionError):
                await FixedWindowRateLimiter(storage).hit(parse("1/second"), "u")
        finally:
            await storage.redis.close()
    asyncio.run(main())
