"""`limits` storages on rlserver's native windows, registered under the
schemes rlserver:// (sync) and async+rlserver:// (limits.aio, on
redis.asyncio) when this module is imported, so Flask-Limiter and slowapi use
them through storage_uri="rlserver://host:port"; rlserver+cluster:// and
async+rlserver+cluster:// take a Redis Cluster of rlserver nodes (any node's
address). The limit and window are read from the key limits builds
(".../<amount>/<multiples>/<granularity>")."""
from __future__ import annotations

import time
from typing import Any, Optional, Tuple

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster
from limits.aio.storage import MovingWindowSupport as AsyncMovingWindowSupport
from limits.aio.storage import Storage as AsyncStorage
from limits.limits import TIME_TYPES
from limits.storage import Storage
from limits.storage.base import MovingWindowSupport

def _parse(key: str) -> Tuple[int, int]:
    """(limit, window in ms) from a limits key."""
    parts = key.split("/")
    try:
        return int(parts[-3]), int(parts[-2]) * TIME_TYPES[parts[-1]][0] * 1000
    except (IndexError, KeyError, ValueError):
        raise ValueError(f"rlserver: {key!r} is not a key of the limits library (.../amount/multiples/granularity)")


def _fixed_only(elastic_expiry: bool) -> None:
    if elastic_expiry:
        # Each hit would push the window's end back; the server's windows
        # end where they end. Refused rather than counted as a fixed window.
        raise NotImplementedError("rlserver: the fixed-window-elastic-expiry strategy is not supported; "
                                  "use fixed-window or moving-window")


def _counted(limit: int, amount: int, d: Any) -> int:
    """incr's count: used units after an admitted hit; past the limit after a denied one (not counted by the server)."""
    return limit - d[2] if d[0] == 1 else limit + amount


def _window(limit: int, expiry: int, d: Any) -> Tuple[int, int]:
    """get_moving_window's (start, count) from a peek."""
    used = limit - d[2]
    if used == 0:
        return int(time.time()), 0
    return int(time.time() + d[4] / 1000 - expiry), used


def _redis_url(uri: str) -> str:
    for scheme in ("async+rlserver+cluster://", "rlserver+cluster://", "async+rlserver://", "rlserver://"):
        if uri.startswith(scheme):
            return "redis://" + uri[len(scheme):]
    return uri


class RlserverStorage(Storage, MovingWindowSupport):
    """Fixed window: CL.WINDOW FIXED (windows aligned to the epoch); moving window: CL.WINDOW LOG (exact)."""

    STORAGE_SCHEME = ["rlserver"]

    def __init__(self, uri: str, prefix: str = "rl:limits:", **options: Any) -> None:
        super().__init__(uri, **options)
        self.prefix = prefix
        self.redis = self._client(_redis_url(uri), **options)

    @staticmethod
    def _client(url: str, **options: Any) -> Any:
        return redis.Redis.from_url(url, **options)

    def incr(self, key: str, expiry: int, elastic_expiry: bool = False, amount: int = 1) -> int:
        _fixed_only(elastic_expiry)
        limit, window = _parse(key)
        d = self.redis.execute_command("CL.WINDOW", self.prefix + key, limit, f"{window}ms", amount, "FIXED")
        return _counted(limit, amount, d)

    def get(self, key: str) -> int:
        limit, window = _parse(key)
        d = self.redis.execute_command("CL.WINDOW", self.prefix + key, limit, f"{window}ms", 0, "FIXED")
        return limit - d[2]

    def get_expiry(self, key: str) -> int:
        limit, window = _parse(key)
        d = self.redis.execute_command("CL.WINDOW", self.prefix + key, limit, f"{window}ms", 0, "FIXED")
        return int(time.time() + d[4] / 1000)

    def check(self) -> bool:
        try:
            return bool(self.redis.ping())
        except redis.RedisError:
            return False

    def reset(self) -> Optional[int]:
        n = 0
        for k in self.redis.scan_iter(match=self.prefix + "*", count=1000):
            n += self.redis.delete(k)
        return n

    def clear(self, key: str) -> None:
        self.redis.delete(self.prefix + key)

    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        d = self.redis.execute_command("CL.WINDOW", self.prefix + key, limit, f"{expiry * 1000}ms", amount, "LOG")
        return d[0] == 1

    def get_moving_window(self, key: str, limit: int, expiry: int) -> Tuple[int, int]:
        """(start, count): a peek gives the count and when the newest entry
        leaves, so start is when the newest entry came, as limits' own
        storages (memory, redis) answer: the reset limits derives is when the
        whole log has left."""
        d = self.redis.execute_command("CL.WINDOW", self.prefix + key, limit, f"{expiry * 1000}ms", 0, "LOG")
        return _window(limit, expiry, d)


class AsyncRlserverStorage(AsyncStorage, AsyncMovingWindowSupport):
    """RlserverStorage for limits.aio (async+rlserver://), on redis.asyncio: the same commands and keys."""

    STORAGE_SCHEME = ["async+rlserver"]

    def __init__(self, uri: str, prefix: str = "rl:limits:", **options: Any) -> None:
        super().__init__(uri, **options)
        self.prefix = prefix
        self.redis = self._client(_redis_url(uri), **options)

    @staticmethod
    def _client(url: str, **options: Any) -> Any:
        return redis.asyncio.Redis.from_url(url, **options)

    async def _peek(self, key: str) -> Tuple[int, Any]:
        limit, window = _parse(key)
        return limit, await self.redis.execute_command("CL.WINDOW", self.prefix + key, limit, f"{window}ms", 0, "FIXED")

    async def incr(self, key: str, expiry: int, elastic_expiry: bool = False, amount: int = 1) -> int:
        _fixed_only(elastic_expiry)
        limit, window = _parse(key)
        d = await self.redis.execute_command("CL.WINDOW", self.prefix + key, limit, f"{window}ms", amount, "FIXED")
        return _counted(limit, amount, d)

    async def get(self, key: str) -> int:
        limit, d = await self._peek(key)
        return limit - d[2]

    async def get_expiry(self, key: str) -> int:
        _, d = await self._peek(key)
        return int(time.time() + d[4] / 1000)

    async def check(self) -> bool:
        try:
            return bool(await self.redis.ping())
        except redis.RedisError:
            return False

    async def reset(self) -> Optional[int]:
        n = 0
        async for k in self.redis.scan_iter(match=self.prefix + "*", count=1000):
            n += await self.redis.delete(k)
        return n

    async def clear(self, key: str) -> None:
        await self.redis.delete(self.prefix + key)

    async def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        d = await self.redis.execute_command("CL.WINDOW", self.prefix + key, limit, f"{expiry * 1000}ms", amount, "LOG")
        return d[0] == 1

    async def get_moving_window(self, key: str, limit: int, expiry: int) -> Tuple[int, int]:
        d = await self.redis.execute_command("CL.WINDOW", self.prefix + key, limit, f"{expiry * 1000}ms", 0, "LOG")
        return _window(limit, expiry, d)


class RlserverClusterStorage(RlserverStorage):
    """RlserverStorage on a Redis Cluster of rlserver nodes (rlserver+cluster://host:port):
    redis-py's RedisCluster routes each key to its primary; reset() scans every primary."""

    STORAGE_SCHEME = ["rlserver+cluster"]

    @staticmethod
    def _client(url: str, **options: Any) -> Any:
        return redis.cluster.RedisCluster.from_url(url, **options)


class AsyncRlserverClusterStorage(AsyncRlserverStorage):
    """AsyncRlserverStorage on a Redis Cluster of rlserver nodes (async+rlserver+cluster://host:port)."""

    STORAGE_SCHEME = ["async+rlserver+cluster"]

    @staticmethod
    def _client(url: str, **options: Any) -> Any:
        return redis.asyncio.cluster.RedisCluster.from_url(url, **options)
