"""WSGI middleware (Flask: app.wsgi_app = RateLimitMiddleware(app.wsgi_app, ...))."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Iterator, Optional

from . import default_key_prefix, header_fields, sf_string
from ._limiters import Lease, Limiter


def key_by_ip(environ: Dict[str, Any]) -> str:
    return str(environ.get("REMOTE_ADDR", ""))


class RateLimitMiddleware:
    """Decides each request with the limiter, sets the RateLimit fields, answers 429 when denied
    and 503 when the limiter raises (configuration errors are logged and passed to on_error first).
    A concurrency limiter holds its lease until the response is closed. cost(environ) gives a
    request's units (default 1); a key of "" lets the request through unlimited."""

    def __init__(self, app: Callable[..., Iterable[bytes]], limiter: Limiter, policy: str = "default",
                 key: Callable[[Dict[str, Any]], str] = key_by_ip, key_prefix: Optional[str] = None,
                 raw_keys: bool = False, x_ratelimit: bool = False,
                 cost: Optional[Callable[[Dict[str, Any]], int]] = None) -> None:
        sf_string(policy)
        self.app, self.limiter, self.policy, self.key, self.x, self.cost = app, limiter, policy, key, x_ratelimit, cost
        self.prefix = "" if raw_keys else (key_prefix if key_prefix is not None else default_key_prefix(policy, limiter.kind))

    def __call__(self, environ: Dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        k = self.key(environ)
        if not k:
            return self.app(environ, start_response)
        n = self.cost(environ) if self.cost else 1
        lease: Optional[Lease] = None
        try:
            if self.limiter.command == "CL.ACQUIRE":
                lease, d = self.limiter.acquire(self.prefix + k, n)
            else:
                d = self.limiter.allow(self.prefix + k, n)
        except Exception:
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
            return [b"rate limiter unavailable\n"]
        fields = list(header_fields(self.policy, self.limiter.window_ms, d, self.x).items())
        if not d.allowed:
            start_response("429 Too Many Requests", [("Content-Type", "text/plain")] + fields)
            return [b"rate limit exceeded\n"]

        def sr(status: str, headers: list, exc_info: Any = None) -> Any:
            return start_response(status, headers + fields, exc_info) if exc_info else start_response(status, headers + fields)

        if lease is None:
            return self.app(environ, sr)
        try:
            body = self.app(environ, sr)
        except BaseException:
            _release(lease)
            raise
        return _Releasing(body, lease)


def _release(lease: Lease) -> None:
    try:
        lease.release()
    except Exception:
        pass  # the lease expires by itself


class _Releasing:
    """The app's response body; close() (which the server calls once the response is sent) releases the lease."""

    def __init__(self, body: Iterable[bytes], lease: Lease) -> None:
        self.body, self.lease = body, lease

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.body)

    def close(self) -> None:
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
        finally:
            _release(self.lease)
