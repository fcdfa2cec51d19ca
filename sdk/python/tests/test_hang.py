"""A connect that hangs (a 127.0.0.1 listener whose accept backlog is full:
the kernel drops the SYNs) is answered within the timeout under each failure
policy, by Client (redis-py's socket_connect_timeout) and AsyncClient
(its timeout around each call)."""
import asyncio
import select
import socket
import time

import pytest
import redis
import redis.asyncio

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
