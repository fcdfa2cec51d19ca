"""ASGI middleware (Starlette/FastAPI: app.add_middleware(RateLimitMiddleware, limiter=...)),
with an AsyncClient's limiter."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from . import default_key_prefix, header_fields, sf_string
from ._limiters import Lease, Limiter


def key_by_ip(scope: Dict[str, Any]) -> str:
    client = scope.get("client")
    return str(client[0]) if client else ""


class RateLimitMiddleware:
    """Decides each HTTP request with the limiter, sets the RateLimit fields, answers 429 when
    denied and 503 when the limiter raises (configuration errors are logged and passed to
    on_error first). A concurrency limiter holds its lease until the app has answered.
    cost(scope) gives a request's units (default 1); a key of "" lets it through unlimited."""

    def __init__(self, app: Any, limiter: Limiter, policy: str = "default", key: Callable[[Dict[str, Any]], str] = key_by_ip,
                 key_prefix: Optional[str] = None, raw_keys: bool = False, x_ratelimit: bool = False,
                 cost: Optional[Callable[[Dict[str, Any]], int]] = None) -> None:
        sf_string(policy)
        self.app, self.limiter, self.policy, self.key, self.x, self.cost = app, limiter, policy, key, x_ratelimit, cost
        self.prefix = "" if raw_keys else (key_prefix if key_prefix is not None else default_key_prefix(policy, limiter.kind))

    async def __call__(self, scope: Dict[str, Any], receive: Any, send: Any) -> None:
        k = self.key(scope) if scope["type"] == "http" else ""
        if not k:
            return await self.app(scope, receive, send)
        n = self.cost(scope) if self.cost else 1
        lease: Optional[Lease] = None
        try:
            if self.limiter.command == "CL.ACQUIRE":
                lease, d = await self.limiter.acquire(self.prefix + k, n)
            else:
                d = await self.limiter.allow(self.prefix + k, n)
        except Exception:
            return await _plain(send, 503, b"rate limiter unavailable\n", [])
        fields = [(name.lower().encode(), v.encode()) for name, v in header_fields(self.policy, self.limiter.window_ms, d, self.x).items()]
        if not d.allowed:
            return await _plain(send, 429, b"rate limit exceeded\n", fields)

        async def send_with(msg: Dict[str, Any]) -> None:
            if msg["type"] == "http.response.start":
                msg = {**msg, "headers": list(msg.get("headers", [])) + fields}
            await send(msg)

        try:
            await self.app(scope, receive, send_with)
        finally:
            if lease is not None:
                try:
                    await lease.release()
                except Exception:
                    pass  # the lease expires by itself


async def _plain(send: Any, status: int, body: bytes, fields: list) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")] + fields})
    await send({"type": "http.response.body", "body": body})
