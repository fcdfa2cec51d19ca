"""A connect that hangs (a 127.0.0.1 listener whose accept backlog is full:
the kernel drops the SYNs) is answered within the timeout under each failure
policy, by Client (redis-py's socket_connect_timeout) and AsyncClient
(its timeout around each call); and, for AsyncClient, a reply that never
comes and calls cancelled by their caller."""
import asyncio
import select
import socket
import sys
import time

import pytest
import redis
import redis.asyncio

import rlserver._limiters
from rlserver import AsyncClient, Client, Decision

TIMEOUT = 0.3
SLACK = 0.7  # a loaded two-core machine


@pytest.fixture(scope="module")
def hanging_port():
    """Shared: a connect abandoned by a timeout leaves the backlog as full as before."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(0)
    addr = ls.getsockname()
    fillers = []
    try:
        for _ in range(64):  # connect until one does not complete: the backlog is full
            s = socket.socket()
            s.setblocking(False)
            fillers.append(s)
            s.connect_ex(addr)
            if not select.select([], [s], [], 0.5)[1]:
                break
        else:
            raise RuntimeError("the accept backlog never filled")
        yield addr[1]
    finally:
        for s in fillers:
            s.close()
        ls.close()


WANT = {
    "open": Decision(True, 5, 5, 0, 0, True),
    "closed": Decision(False, 5, 0, 1000, 1000, True),
    "local": Decision(True, 5, 4, 0, 1000, True),
}


def timed(f):
    t = time.monotonic()
    try:
        return f(), time.monotonic() - t
    except Exception as e:
        return e, time.monotonic() - t


@pytest.mark.parametrize("mode", ["error", "open", "closed", "local"])
def test_sync_connect_hangs(hanging_port, mode):
    events = []
    c = Client.from_url(f"redis://127.0.0.1:{hanging_port}", timeout=TIMEOUT, failure=mode, on_error=events.append)
    got, took = timed(lambda: c.token_bucket(5, 1, 1000).allow("k"))
    assert TIMEOUT * 0.9 <= took < TIMEOUT + SLACK
    if mode == "error":
        assert isinstance(got, redis.TimeoutError) and events == []
    else:
        assert got == WANT[mode]
        assert [(e.mode, e.command, e.config, type(e.error)) for e in events] == [(mode, "CL.TOKENBUCKET", False, redis.TimeoutError)]
    c.redis.close()


@pytest.mark.parametrize("mode", ["error", "open", "closed", "local"])
def test_async_connect_hangs(hanging_port, mode):
    async def main():
        events = []
        r = redis.asyncio.Redis(host="127.0.0.1", port=hanging_port)
        c = AsyncClient(r, timeout=TIMEOUT, failure=mode, on_error=events.append)
        t = time.monotonic()
        try:
            got = await c.token_bucket(5, 1, 1000).allow("k")
        except Exception as e:
            got = e
        took = time.monotonic() - t
        await r.close()
        return got, took, events
    got, took, events = asyncio.run(main())
    assert TIMEOUT * 0.9 <= took < TIMEOUT + SLACK
    if mode == "error":
        assert isinstance(got, TimeoutError) and events == []
    else:
        assert got == WANT[mode]
        assert [(e.mode, e.command, e.config) for e in events] == [(mode, "CL.TOKENBUCKET", False)]
        assert isinstance(events[0].error, TimeoutError)


async def resp_server(hold):
    """A RESP server on 127.0.0.1 answering each command with a token bucket
    decision, except those whose key (second argument) is in hold: never answered."""
    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readline()
                if not head:
                    return
                args = []
                for _ in range(int(head[1:])):
                    await reader.readline()
                    args.append((await reader.readline()).rstrip(b"\r\n").decode())
                if len(args) > 1 and args[1] in hold:
                    continue
                writer.write(b"*5\r\n:1\r\n:5\r\n:4\r\n:0\r\n:200\r\n")
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()
    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    return srv, srv.sockets[0].getsockname()[1]


@pytest.mark.parametrize("mode", ["error", "open", "closed", "local"])
@pytest.mark.parametrize("path", ["timer", "wait_for"])
def test_async_reply_never_comes(mode, path, monkeypatch):
    """Connected, then a reply that never comes, after fast calls on the same
    client (the timer that bounds calls moves from one call to the next); and
    by asyncio.wait_for, the path before Python 3.11 (there asyncio.TimeoutError
    is not the builtin TimeoutError, so only a run on 3.9/3.10 sees that part)."""
    if path == "wait_for":
        if sys.version_info >= (3, 12):
            pytest.skip("wait_for is asyncio.timeout from 3.12, and not the path there")
        monkeypatch.setattr(rlserver._limiters, "_HAS_UNCANCEL", False)

    async def main():
        srv, port = await resp_server({"slow"})
        events = []
        r = redis.asyncio.Redis(host="127.0.0.1", port=port)
        c = AsyncClient(r, timeout=TIMEOUT, failure=mode, on_error=events.append)
        tb = c.token_bucket(5, 1, 1000)
        try:
            for _ in range(50):
                assert await tb.allow("fast") == Decision(True, 5, 4, 0, 200)
            await asyncio.sleep(TIMEOUT * 0.7)  # the timer armed by the first fast call is due during the slow one
            # redis-py 4.3's async_timeout leaves a cancel request counted per
            # call (a timeout of 0 checks the connection); the SDK's own, none
            count = asyncio.current_task().cancelling() + 1
            t = time.monotonic()
            try:
                got = await tb.allow("slow")
            except Exception as e:
                got = e
            took = time.monotonic() - t
            assert asyncio.current_task().cancelling() <= count
            return got, took, events
        finally:
            await r.close()
            srv.close()
    got, took, events = asyncio.run(main())
    assert TIMEOUT * 0.9 <= took < TIMEOUT + SLACK
    if mode == "error":
        assert isinstance(got, TimeoutError) and events == []
    else:
        assert got == WANT[mode]
        assert [(e.mode, e.command) for e in events] == [(mode, "CL.TOKENBUCKET")] and isinstance(events[0].error, TimeoutError)


def test_async_concurrent_deadlines():
    """Calls in flight at once each fail at their own deadline; the fast ones in between are answered."""
    async def main():
        srv, port = await resp_server({"slow"})
        r = redis.asyncio.Redis(host="127.0.0.1", port=port)
        tb = AsyncClient(r, timeout=TIMEOUT, failure="open").token_bucket(5, 1, 1000)

        async def slow(delay):
            await asyncio.sleep(delay)
            t = time.monotonic()
            d = await tb.allow("slow")
            return d.fallback, time.monotonic() - t

        async def fast():
            return [(await tb.allow("fast")).fallback for _ in range(20)]
        try:
            return await asyncio.gather(slow(0), slow(TIMEOUT / 3), fast(), slow(TIMEOUT * 2 / 3))
        finally:
            await r.close()
            srv.close()
    a, b, fast, c = asyncio.run(main())
    assert fast == [False] * 20
    for fallback, took in (a, b, c):
        assert fallback and TIMEOUT * 0.9 <= took < TIMEOUT + SLACK


def test_async_cancel_is_not_a_timeout():
    """The caller's own cancel of a call in flight stays a CancelledError (not the
    failure policy's business), and the task can go on calling."""
    async def main():
        srv, port = await resp_server({"slow"})
        r = redis.asyncio.Redis(host="127.0.0.1", port=port)
        events = []
        tb = AsyncClient(r, timeout=TIMEOUT, failure="open", on_error=events.append).token_bucket(5, 1, 1000)
        try:
            task = asyncio.ensure_future(tb.allow("slow"))
            await asyncio.sleep(TIMEOUT / 3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert events == []
            # a cancel that comes with the timeout's: still a cancel
            task = asyncio.ensure_future(tb.allow("slow"))
            loop = asyncio.get_running_loop()
            loop.call_at(loop.time() + TIMEOUT, task.cancel)
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.sleep(TIMEOUT * 1.5)
            assert (await tb.allow("fast")).fallback is False
        finally:
            await r.close()
            srv.close()
    asyncio.run(main())


def test_async_one_client_two_loops(hanging_port):
    """A client used under one asyncio.run and then another: its timeout holds on each loop."""
    r = redis.asyncio.Redis(host="127.0.0.1", port=hanging_port)
    tb = AsyncClient(r, timeout=TIMEOUT, failure="open").token_bucket(5, 1, 1000)

    async def main():
        t = time.monotonic()
        d = await tb.allow("k")
        took = time.monotonic() - t
        await r.connection_pool.disconnect()
        return d, took
    for _ in range(2):
        d, took = asyncio.run(main())
        assert d == WANT["open"] and TIMEOUT * 0.9 <= took < TIMEOUT + SLACK
