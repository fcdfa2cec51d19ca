"""rlserver's Python SDK: typed limiters over redis-py (sync and asyncio,
standalone and cluster), a failure policy for when the server cannot be
reached, the IETF RateLimit fields, WSGI and ASGI middleware, and a
`limits` storage under the scheme rlserver:// (import rlserver.limits_storage)."""
from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import redis
from redis import exceptions as rexc

__all__ = [
    "NEVER", "Decision", "ErrorEvent", "Client", "AsyncClient", "LimitedError", "BadReplyError",
    "sf_string", "header_fields", "default_key_prefix", "misconfigured", "unreachable",
]

NEVER = -1
"""retry_after_ms of a request that can never be admitted (its cost exceeds the limit)."""

log = logging.getLogger("rlserver")


@dataclass(frozen=True)
class Decision:
    """The server's five-integer decision reply, typed."""
    allowed: bool
    limit: int
    remaining: int
    retry_after_ms: int
    reset_after_ms: int
    fallback: bool = False


@dataclass(frozen=True)
class ErrorEvent:
    """A call that failed for a reason other than the caller's own."""
    command: str
    key: str
    error: BaseException
    mode: str
    config: bool


class LimitedError(Exception):
    def __init__(self, decision: Decision) -> None:
        super().__init__("rlserver: rate limited")
        self.decision = decision


class BadReplyError(Exception):
    pass


_UNREACHABLE = ("LOADING", "CLUSTERDOWN", "TRYAGAIN", "MASTERDOWN")
_CONFIG = ("WRONGTYPE", "WRONGPASS", "NOAUTH", "NOPERM", "ERR unknown command", "ERR AUTH", "ERR invalid password",
           "invalid username-password", "Authentication required", "unknown command")


def misconfigured(err: BaseException) -> bool:
    """A configuration error: reported loudly, never answered by the policy."""
    if isinstance(err, (rexc.AuthenticationError, rexc.AuthenticationWrongNumberOfArgsError, rexc.NoPermissionError)):
        return True
    msg = str(err)
    return isinstance(err, rexc.ResponseError) and any(msg.startswith(p) or p in msg for p in _CONFIG)


def unreachable(err: BaseException) -> bool:
    """A transport failure (the policy applies), not an error about the request."""
    if misconfigured(err):
        return False
    if isinstance(err, (rexc.ConnectionError, rexc.TimeoutError, TimeoutError, asyncio.TimeoutError, OSError)):
        return True
    if isinstance(err, rexc.ResponseError):
        return str(err).startswith(_UNREACHABLE)
    return isinstance(err, rexc.RedisError)


def parse_decision(v: Any) -> Decision:
    if isinstance(v, (list, tuple)) and len(v) >= 5:
        a, b, c, d, e = v[0], v[1], v[2], v[3], v[4]
        if isinstance(a, int) and isinstance(b, int) and isinstance(c, int) and isinstance(d, int) and isinstance(e, int):
            return Decision(a == 1, b, c, d, e)
    raise BadReplyError(f"rlserver: unexpected reply {v!r}")


def dur(ms: float) -> str:
    if not ms > 0:
        raise ValueError(f"rlserver: duration must be positive, got {ms}")
    return f"{max(1, round(ms))}ms"


def sf_string(s: str) -> str:
    """An RFC 8941 sf-string: printable ASCII, with " and \\ escaped; anything else is refused."""
    out = ['"']
    for i, ch in enumerate(s):
        c = ord(ch)
        if c < 0x20 or c > 0x7E:
            raise ValueError(f"rlserver: policy name {s!r}: an RFC 8941 string holds printable ASCII only (code {c} at {i})")
        if ch in '"\\':
            out.append("\\")
        out.append(ch)
    out.append('"')
    return "".join(out)


def _ceil_s(ms: float) -> int:
    return 0 if ms <= 0 else math.ceil(ms / 1000)


def header_fields(policy: str, window_ms: float, d: Decision, x: bool = False) -> Dict[str, str]:
    """The RateLimit fields (draft-ietf-httpapi-ratelimit-headers-11) for d, as the other SDKs write them."""
    name = sf_string(policy)
    reset = str(_ceil_s(d.reset_after_ms))
    h = {
        "RateLimit-Policy": f"{name};q={d.limit};w={max(1, _ceil_s(window_ms))}",
        "RateLimit": f"{name};r={d.remaining};t={reset}",
    }
    if not d.allowed and d.retry_after_ms != NEVER:
        h["Retry-After"] = str(max(1, _ceil_s(d.retry_after_ms)))
    if x:
        h["X-RateLimit-Limit"] = str(d.limit)
        h["X-RateLimit-Remaining"] = str(d.remaining)
        h["X-RateLimit-Reset"] = reset
    return h


def default_key_prefix(policy: str, kind: str) -> str:
    return f"rl:{policy}:{kind}:"


@dataclass(frozen=True)
class _Spec:
    id: str
    limit: int
    window_ms: float


class _LocalStore:
    """The in-process fallback ("local"): a token bucket per limiter and key. Per process, approximate."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buckets: Dict[str, List[float]] = {}
        self._held: Dict[str, int] = {}

    def take(self, s: _Spec, key: str, n: int, peek: bool) -> Decision:
        with self._lock:
            now = time.monotonic() * 1000
            b = self._buckets.setdefault(s.id + "\0" + key, [float(s.limit), now])
            per = s.window_ms / s.limit
            b[0] = min(float(s.limit), b[0] + (now - b[1]) / per)
            b[1] = now
            allowed, retry = False, 0
            if n > s.limit:
                retry = NEVER
            elif b[0] >= n:
                allowed = True
                if not peek:
                    b[0] -= n
            else:
                retry = math.ceil((n - b[0]) * per)
            return Decision(allowed, s.limit, int(b[0]), retry, math.ceil((s.limit - b[0]) * per), True)

    def acquire(self, s: _Spec, key: str, n: int) -> bool:
        with self._lock:
            k = s.id + "\0" + key
            if self._held.get(k, 0) + n > s.limit:
                return False
            self._held[k] = self._held.get(k, 0) + n
            return True

    def release(self, s: _Spec, key: str, n: int) -> None:
        with self._lock:
            k = s.id + "\0" + key
            self._held[k] = self._held.get(k, 0) - n
            if self._held[k] <= 0:
                del self._held[k]


class _Base:
    """What sync and async clients share: options, the policy and limiter specs."""

    def __init__(self, r: Any, timeout: Optional[float], failure: str, on_error: Optional[Callable[[ErrorEvent], None]],
                 closed_retry_after_ms: int, logger: Optional[logging.Logger], local: Optional[_LocalStore]) -> None:
        if failure not in ("error", "open", "closed", "local"):
            raise ValueError(f"rlserver: failure mode {failure!r}")
        self.redis = r
        self.timeout = timeout
        self.failure = failure
        self.on_error = on_error
        self.closed_retry_after_ms = closed_retry_after_ms
        self.log = logger or log
        self.local = local or _LocalStore()

    def report(self, e: ErrorEvent) -> None:
        if e.config:
            self.log.error("rlserver: configuration error on %s %r: %s", e.command, e.key, e.error)
        if self.on_error:
            self.on_error(e)

    def _policy(self, command: str, key: str, err: BaseException) -> Optional[BaseException]:
        if misconfigured(err):
            self.report(ErrorEvent(command, key, err, "error", True))
            return err
        if not unreachable(err) or self.failure == "error":
            return err
        self.report(ErrorEvent(command, key, err, self.failure, False))
        return None

    def _fallback(self, s: _Spec, key: str, n: int, peek: bool = False) -> Decision:
        if self.failure == "open":
            return Decision(True, s.limit, s.limit, 0, 0, True)
        if self.failure == "closed":
            r = self.closed_retry_after_ms
            return Decision(False, s.limit, 0, r, r, True)
        return self.local.take(s, key, n, peek)


from ._limiters import AsyncClient, Client  # noqa: E402
