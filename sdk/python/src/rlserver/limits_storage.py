"""A `limits` storage on rlserver's native windows, registered under the
scheme rlserver:// (import this module first), so Flask-Limiter and slowapi
use it through storage_uri="rlserver://host:port". The limit and window are
read from the key limits builds (".../<amount>/<multiples>/<granularity>")."""
from __future__ import annotations

import time
from typing import Any, Optional, Tuple

import redis
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


class RlserverStorage(Storage, MovingWindowSupport):
    """Fixed window: CL.WINDOW FIXED (windows aligned to the epoch); moving window: CL.WINDOW LOG (exact)."""

    STORAGE_SCHEME = ["rlserver"]

    def __init__(self, uri: str, prefix: str = "rl:limits:", **options: Any) -> None:
        super().__init__(uri, **options)
        self.prefix = prefix
        self.redis = redis.Redis.from_url(uri.replace("rlserver://", "redis://", 1), **options)

    def incr(self, key: str, expiry: int, elastic_expiry: bool = False, amount: int = 1) -> int:
        limit, window = _parse(key)
        d = self.redis.execute_command("CL.WINDOW", self.prefix + key, limit, f"{window}ms", amount, "FIXED")
        return limit - d[2] if d[0] == 1 else limit + amount

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
        leaves, so the reset limits derives is when the whole log has left
        (conservative: a slot may free earlier)."""
        d = self.redis.execute_command("CL.WINDOW", self.prefix + key, limit, f"{expiry * 1000}ms", 0, "LOG")
        used = limit - d[2]
        if used == 0:
            return int(time.time()), 0
        return int(time.time() + d[4] / 1000 - expiry), used
