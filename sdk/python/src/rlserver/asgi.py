"""ASGI middleware (Starlette/FastAPI: app.add_middleware(RateLimitMiddleware, limiter=...)),
with an AsyncClient's limiter."""
from __future__ import annotations

from typing import Any, Awaitable, Callable, Dict, Optional

from . import default_key_prefix, header_fields, sf_string
from ._limiters import Limiter


def key_by_ip(scope: Dict[str, Any]) -> str:
    client = scope.get("client")
    return str(client[0]) if client else ""


class RateLimitMiddleware:
    def __init__(self, app: Any, limiter: Limiter, policy: str = "default", key: Callable[[Dict[str, Any]], str] = key_by_ip,
                 key_prefix: Optional[str] = None, raw_keys: bool = False, x_ratelimit: bool = False) -> None:
        sf_string(policy)
        self.app, self.limiter, self.policy, self.key, self.x = app, limiter, policy, key, x_ratelimit
        self.prefix = "" if raw_keys else (key_prefix if key_prefix is not None else default_key_prefix(policy, limiter.kind))

    async def __call__(self, scope: Dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not self.key(scope):
            return await self.app(scope, receive, send)
        try:
            d = await self.limiter.allow(self.prefix + self.key(scope))
        except Exception:
            return await _plain(send, 503, b"rate limiter unavailable\n", [])
        fields = [(k.lower().encode(), v.encode()) for k, v in header_fields(self.policy, self.limiter.window_ms, d, self.x).items()]
        if not d.allowed:
            return await _plain(send, 429, b"rate limit exceeded\n", fields)

        async def send_with(msg: Dict[str, Any]) -> None:
            if msg["type"] == "http.response.start":
                msg = {**msg, "headers": list(msg.get("headers", [])) + fields}
            await send(msg)

        await self.app(scope, receive, send_with)


async def _plain(send: Any, status: int, body: bytes, fields: list) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")] + fields})
    await send({"type": "http.response.body", "body": body})
