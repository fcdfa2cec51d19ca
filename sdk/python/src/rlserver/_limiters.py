"""The limiters, over a sync (Client) or asyncio (AsyncClient) redis-py client."""
from __future__ import annotations

import asyncio
import logging

import redis
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import NEVER, BadReplyError, Decision, ErrorEvent, LimitedError, _Base, _LocalStore, _Spec, dur, parse_decision


class Limiter:
    """One limiter (its command and fixed parameters); allow() on a Client returns a
    Decision, on an AsyncClient an awaitable of one."""

    def __init__(self, client: "_Base", command: str, rule: str, kind: str, limit: int, window_ms: float,
                 params: List[str], extra: Sequence[str] = ()) -> None:
        self.client = client
        self.command = command
        self.rule = rule
        self.kind = kind
        self.params = params
        self.extra = list(extra)
        self.spec = _Spec(" ".join([rule, *params]), limit, window_ms)

    @property
    def limit(self) -> int:
        return self.spec.limit

    @property
    def window_ms(self) -> float:
        return self.spec.window_ms

    def rule_for(self, key: str) -> Tuple["Limiter", str]:
        """This limiter for key, as a rule of all()."""
        return (self, key)

    def allow(self, key: str, n: int = 1) -> Any:
        if self.command == "CL.THROTTLE":
            return self.client._all_first(n, self, key)
        if self.command == "CL.ACQUIRE":
            return self.client._acquire(self, key, n, decision_only=True)
        return self.client._decide(self, key, [self.command, key, *self.params, n, *self.extra], n)

    decide = allow

    def reserve(self, key: str, n: int, max_wait_ms: float) -> Any:
        """Token bucket: takes n tokens if they exist within max_wait_ms; act after retry_after_ms."""
        return self.client._decide(self, key, [self.command, key, *self.params, n, "RESERVE", dur(max_wait_ms)], n)

    def acquire(self, key: str, n: int = 1) -> Any:
        """Concurrency: (lease or None, decision)."""
        self._concurrency("acquire")
        return self.client._acquire(self, key, n)

    def hold(self, key: str, n: int = 1) -> "Held":
        """Concurrency: holds n units of key for a with block and always releases
        them, whether the block returns or raises; LimitedError when denied.
        `with conc.hold(key) as lease:` on a Client, `async with` on an AsyncClient."""
        self._concurrency("hold")
        return Held(self, key, n)

    def _concurrency(self, what: str) -> None:
        if self.command != "CL.ACQUIRE":
            raise TypeError(f"rlserver: {what} needs a concurrency limiter, not {self.kind}")


class Held:
    """Limiter.hold's context manager (sync and async): the lease while held.
    A failed release is dropped: the lease expires by itself."""

    def __init__(self, lim: Limiter, key: str, n: int) -> None:
        self.lim, self.key, self.n = lim, key, n
        self.lease: Optional["Lease"] = None

    def __enter__(self) -> "Lease":
        lease, d = self.lim.acquire(self.key, self.n)
        if lease is None:
            raise LimitedError(d)
        self.lease = lease
        return lease

    def __exit__(self, *exc: Any) -> None:
        try:
            self.lease.release()  # type: ignore[union-attr]
        except Exception:
            pass

    async def __aenter__(self) -> "Lease":
        lease, d = await self.lim.acquire(self.key, self.n)
        if lease is None:
            raise LimitedError(d)
        self.lease = lease
        return lease

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self.lease.release()  # type: ignore[union-attr]
        except Exception:
            pass


class Lease:
    def __init__(self, client: "_Base", lease_id: str, key: str, n: int, spec: Optional[_Spec], local: bool = False) -> None:
        self.client, self.id, self.key, self.n, self.spec, self.local = client, lease_id, key, n, spec, local

    def release(self) -> Any:
        return self.client._lease_call(self, ["CL.RELEASE", self.key, self.id])

    def renew(self, ms: float) -> Any:
        return self.client._lease_call(self, ["CL.RENEW", self.key, self.id, dur(ms)])


def _lease_id(v: Any) -> str:
    x = v[5] if isinstance(v, (list, tuple)) and len(v) > 5 else None
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, str):
        return x
    raise BadReplyError(f"rlserver: unexpected reply {v!r}")


class _Factory(_Base):
    def token_bucket(self, capacity: int, rate: int, period_ms: float) -> Limiter:
        return Limiter(self, "CL.TOKENBUCKET", "TOKENBUCKET", "tokenbucket", capacity, capacity / rate * period_ms, [str(capacity), str(rate), dur(period_ms)])

    def throttle(self, max_burst: int, count: int, period_ms: float) -> Limiter:
        return Limiter(self, "CL.THROTTLE", "THROTTLE", "throttle", max_burst + 1, (max_burst + 1) / count * period_ms, [str(max_burst), str(count), dur(period_ms)])

    def leaky_bucket(self, capacity: int, rate: int, period_ms: float) -> Limiter:
        return Limiter(self, "CL.LEAKYBUCKET", "LEAKYBUCKET", "leakybucket", capacity, capacity / rate * period_ms, [str(capacity), str(rate), dur(period_ms)])

    def window(self, mode: str, limit: int, window_ms: float) -> Limiter:
        if mode not in ("fixed", "sliding", "log"):
            raise ValueError(f"rlserver: window mode {mode!r}")
        return Limiter(self, "CL.WINDOW", mode.upper(), mode, limit, window_ms, [str(limit), dur(window_ms)], [mode.upper()])

    def concurrency(self, limit: int, lease_ms: float) -> Limiter:
        return Limiter(self, "CL.ACQUIRE", "ACQUIRE", "concurrency", limit, lease_ms, [str(limit), dur(lease_ms)])

    @staticmethod
    def _all_args(cost: int, rules: Sequence[Tuple[Limiter, str]]) -> List[Any]:
        if not rules:
            raise ValueError("rlserver: all needs at least one rule")
        args: List[Any] = ["CL.ALL", len(rules)]
        for lim, key in rules:
            args += [lim.rule, key, *lim.params]
        return args + ["COST", cost]

    def _all_reply(self, v: Any, cost: int, rules: Sequence[Tuple[Limiter, str]]) -> Tuple[bool, List[Decision], List[Optional[Lease]]]:
        if not isinstance(v, (list, tuple)) or len(v) != len(rules) + 1:
            raise BadReplyError(f"rlserver: unexpected reply {v!r}")
        ds = [parse_decision(x) for x in v[1:]]
        leases = [Lease(self, _lease_id(v[i + 1]), key, cost, lim.spec) if lim.rule == "ACQUIRE" and ds[i].allowed else None
                  for i, (lim, key) in enumerate(rules)]
        return v[0] == 1, ds, leases

    def _all_fallback(self, err: BaseException, cost: int, rules: Sequence[Tuple[Limiter, str]]) -> Tuple[bool, List[Decision], List[Optional[Lease]]]:
        e = self._policy("CL.ALL", rules[0][1], err)
        if e is not None:
            raise e
        ds = [self._fallback(lim.spec, key, cost, True) for lim, key in rules]
        ok = all(d.allowed for d in ds)
        if ok and self.failure == "local":
            ds = [self._fallback(lim.spec, key, cost) for lim, key in rules]
        leases = [Lease(self, "", key, cost, lim.spec) if ok and lim.rule == "ACQUIRE" else None for lim, key in rules]
        return ok, ds, leases

    def _acquire_fallback(self, lim: Limiter, key: str, n: int, err: BaseException) -> Tuple[Optional[Lease], Decision]:
        e = self._policy("CL.ACQUIRE", key, err)
        if e is not None:
            raise e
        local = self.failure == "local" and self.local.acquire(lim.spec, key, n)
        if self.failure != "open" and not local:
            r = self.closed_retry_after_ms
            return None, Decision(False, lim.limit, 0, r, r, True)
        return Lease(self, "", key, n, lim.spec, local), Decision(True, lim.limit, 0, 0, 0, True)

    def _acquired(self, lim: Limiter, key: str, n: int, v: Any) -> Tuple[Optional[Lease], Decision]:
        d = parse_decision(v)
        if not d.allowed or n == 0:
            return None, d
        return Lease(self, _lease_id(v), key, n, lim.spec), d


class Client(_Factory):
    """Limiters over a sync redis-py client (redis.Redis or redis.cluster.RedisCluster).
    The timeout is the client's: socket_connect_timeout bounds connecting and
    socket_timeout each reply (Client.from_url sets both)."""

    def __init__(self, r: Any, *, failure: str = "error", on_error: Optional[Callable[[ErrorEvent], None]] = None,
                 closed_retry_after_ms: int = 1000, logger: Optional[logging.Logger] = None, _local: Optional[_LocalStore] = None) -> None:
        super().__init__(r, None, failure, on_error, closed_retry_after_ms, logger, _local)

    @classmethod
    def from_url(cls, url: str, timeout: float = 0.05, **kw: Any) -> "Client":
        """A redis-py client for url (redis://[:password@]host:port) whose timeout bounds connecting and each call."""
        r = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout, retry_on_timeout=False)
        return cls(r, **kw)

    def with_options(self, **kw: Any) -> "Client":
        return Client(self.redis, _local=self.local, **kw)

    def check(self) -> None:
        """PING, so that a wrong or missing password is found (logged, on_error) at start."""
        try:
            self.redis.execute_command("PING")
        except Exception as e:
            self._policy("PING", "", e)
            raise

    def _decide(self, lim: Limiter, key: str, args: List[Any], n: int) -> Decision:
        try:
            v = self.redis.execute_command(*args)
        except Exception as e:
            err = self._policy(lim.command, key, e)
            if err is not None:
                raise err
            return self._fallback(lim.spec, key, n)
        return parse_decision(v)

    def all(self, cost: int, rules: Sequence[Tuple[Limiter, str]]) -> Tuple[bool, List[Decision], List[Optional[Lease]]]:
        """CL.ALL: (allowed, decisions, leases); all admit or none consumes."""
        args = self._all_args(cost, rules)
        try:
            v = self.redis.execute_command(*args)
        except Exception as e:
            return self._all_fallback(e, cost, rules)
        return self._all_reply(v, cost, rules)

    def _all_first(self, n: int, lim: Limiter, key: str) -> Decision:
        return self.all(n, [(lim, key)])[1][0]

    def _acquire(self, lim: Limiter, key: str, n: int, decision_only: bool = False) -> Any:
        try:
            v = self.redis.execute_command("CL.ACQUIRE", key, *lim.params, n)
            res = self._acquired(lim, key, n, v)
        except (BadReplyError,):
            raise
        except Exception as e:
            res = self._acquire_fallback(lim, key, n, e)
        return res[1] if decision_only else res

    def _lease_call(self, le: Lease, args: List[Any]) -> bool:
        if le.id == "":
            if le.local and args[0] == "CL.RELEASE" and le.spec:
                self.local.release(le.spec, le.key, le.n)
            return True
        return self.redis.execute_command(*args) == 1


_HAS_UNCANCEL = hasattr(asyncio.Task, "uncancel")  # 3.11+
_current_task = asyncio.current_task
_EXPIRED = "rlserver: the call took longer than the timeout"


class _Deadlines:
    """The timeouts of one AsyncClient's calls on one event loop. All have the
    client's timeout, so the calls in flight, in the order they began, are in
    deadline order: one loop timer, at the first deadline, serves them all and
    moves to the next when it fires. A call costs a dict insert and delete, not
    a timer scheduled and cancelled (asyncio.timeout's cost, a tenth of a local
    round trip). An expired call's task is cancelled, with a message of its
    own, and the call raises TimeoutError.

    Not asyncio.timeout's way of telling its cancel from the caller's (the
    task's count of cancel requests against the count at entry): redis-py 4.3's
    async_timeout 4.0 leaves cancel requests it has answered itself counted
    (a timeout of 0 on every connection taken from the pool), and a reply that
    never came would then end in a CancelledError past the failure policy."""

    __slots__ = ("loop", "calls", "expired", "handle")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.calls: Dict[asyncio.Task, float] = {}  # task -> deadline, in the order the calls began
        self.expired: set = set()  # tasks cancelled here whose call has not yet ended
        self.handle: Optional[asyncio.TimerHandle] = None

    def fire(self) -> None:
        self.handle = None
        now = self.loop.time()
        calls = self.calls
        while calls:
            task = next(iter(calls))
            deadline = calls[task]
            if deadline > now:
                self.handle = self.loop.call_at(deadline, self.fire)
                return
            waiter = getattr(task, "_fut_waiter", None)
            if getattr(task, "_must_cancel", False) or (waiter is not None and waiter.cancelled()):
                # A cancel is on its way to the task already: its caller's, which
                # must stay a CancelledError, or one redis-py makes and catches
                # itself. Look again in a moment.
                self.handle = self.loop.call_at(now + 0.001, self.fire)
                return
            del calls[task]
            self.expired.add(task)
            task.cancel(_EXPIRED)


class AsyncClient(_Factory):
    """Limiters over redis.asyncio (Redis or RedisCluster); timeout (seconds) bounds each call, connecting included."""

    def __init__(self, r: Any, *, timeout: Optional[float] = None, failure: str = "error",
                 on_error: Optional[Callable[[ErrorEvent], None]] = None, closed_retry_after_ms: int = 1000,
                 logger: Optional[logging.Logger] = None, _local: Optional[_LocalStore] = None) -> None:
        super().__init__(r, timeout, failure, on_error, closed_retry_after_ms, logger, _local)
        # The last event loop's. A call on another loop replaces it; calls still
        # in flight on the one replaced keep theirs (and its timer) to the end.
        self._dl: Optional[_Deadlines] = None

    def with_options(self, **kw: Any) -> "AsyncClient":
        return AsyncClient(self.redis, _local=self.local, **kw)

    async def _call(self, args: List[Any]) -> Any:
        timeout = self.timeout
        if not timeout:
            return await self.redis.execute_command(*args)
        task = _current_task() if _HAS_UNCANCEL else None
        if task is None:  # before 3.11 (no Task.uncancel), or not in a task
            try:
                return await asyncio.wait_for(self.redis.execute_command(*args), timeout)
            except asyncio.TimeoutError:  # not the builtin TimeoutError before 3.11
                raise TimeoutError(f"rlserver: {args[0]} took more than {timeout}s") from None
        loop = task.get_loop()
        dl = self._dl
        if dl is None or dl.loop is not loop:
            dl = self._dl = _Deadlines(loop)
        calls = dl.calls
        deadline = loop.time() + timeout
        calls[task] = deadline
        if dl.handle is None:
            dl.handle = loop.call_at(deadline, dl.fire)
        try:
            return await self.redis.execute_command(*args)
        except asyncio.CancelledError as e:
            if task in dl.expired:
                dl.expired.discard(task)
                task.uncancel()
                if e.args and e.args[0] == _EXPIRED:
                    raise TimeoutError(f"rlserver: {args[0]} took more than {timeout}s") from None
            raise
        finally:
            if calls.pop(task, None) is None and task in dl.expired:  # expired, but the call ended otherwise
                dl.expired.discard(task)
                task.uncancel()

    async def check(self) -> None:
        try:
            await self._call(["PING"])
        except Exception as e:
            self._policy("PING", "", e)
            raise

    async def _decide(self, lim: Limiter, key: str, args: List[Any], n: int) -> Decision:
        try:
            v = await self._call(args)
        except Exception as e:
            err = self._policy(lim.command, key, e)
            if err is not None:
                raise err
            return self._fallback(lim.spec, key, n)
        return parse_decision(v)

    async def all(self, cost: int, rules: Sequence[Tuple[Limiter, str]]) -> Tuple[bool, List[Decision], List[Optional[Lease]]]:
        args = self._all_args(cost, rules)
        try:
            v = await self._call(args)
        except Exception as e:
            return self._all_fallback(e, cost, rules)
        return self._all_reply(v, cost, rules)

    async def _all_first(self, n: int, lim: Limiter, key: str) -> Decision:
        return (await self.all(n, [(lim, key)]))[1][0]

    async def _acquire(self, lim: Limiter, key: str, n: int, decision_only: bool = False) -> Any:
        try:
            v = await self._call(["CL.ACQUIRE", key, *lim.params, n])
            res = self._acquired(lim, key, n, v)
        except BadReplyError:
            raise
        except Exception as e:
            res = self._acquire_fallback(lim, key, n, e)
        return res[1] if decision_only else res

    async def _lease_call(self, le: Lease, args: List[Any]) -> bool:
        if le.id == "":
            if le.local and args[0] == "CL.RELEASE" and le.spec:
                self.local.release(le.spec, le.key, le.n)
            return True
        return (await self._call(args)) == 1
