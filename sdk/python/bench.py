#!/usr/bin/env python3
"""The SDK's overhead per decision over the raw redis-py call it makes, as
sdk/go/bench_test.go and sdk/node's `npm run bench` measure it: the raw
execute_command("CL.TOKENBUCKET", ...) and the SDK's allow() alternate on one
connection to a local server (so load on the machine hits both alike); prints
the SDK's extra time as a percentage of the raw call's, for Client (sync) and
AsyncClient (asyncio, with and without a per-call timeout).

    cd sdk/python && /usr/bin/python3 bench.py        # BENCH_N=50000 by default

Builds the server unless $RLSERVER_BIN is set. Not part of the tests.
"""
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE / "src"), str(HERE / "tests")]

import redis  # noqa: E402
import redis.asyncio  # noqa: E402

from conftest import ROOT, Server  # noqa: E402
from rlserver import AsyncClient, Client  # noqa: E402

ARGS = ("CL.TOKENBUCKET", "bench", "1000000", "1000000", "1000ms", 1)


def report(name, n, raw, sdk):
    print(f"{name}: raw {raw * 1e9 / n:.0f} ns/op, sdk {sdk * 1e9 / n:.0f} ns/op, overhead {100 * (sdk - raw) / raw:.2f}%")


def bench_sync(url, n):
    r = redis.Redis.from_url(url)
    for name, opts in (("sync", {}), ("sync failure=open", {"failure": "open"})):
        tb = Client(r, **opts).token_bucket(1000000, 1000000, 1000)
        tb.allow("bench")
        raw = sdk = 0.0
        for _ in range(n):
            t0 = time.perf_counter()
            r.execute_command(*ARGS)
            t1 = time.perf_counter()
            tb.allow("bench")
            sdk += time.perf_counter() - t1
            raw += t1 - t0
        report(name, n, raw, sdk)
    r.close()


async def bench_async(url, n):
    r = redis.asyncio.Redis.from_url(url)
    for name, opts in (("async", {}), ("async timeout", {"timeout": 1.0, "failure": "open"})):
        tb = AsyncClient(r, **opts).token_bucket(1000000, 1000000, 1000)
        await tb.allow("bench")
        raw = sdk = 0.0
        for _ in range(n):
            t0 = time.perf_counter()
            await r.execute_command(*ARGS)  # unbounded, as in the Node bench: the timeout's cost counts as the SDK's
            t1 = time.perf_counter()
            await tb.allow("bench")
            sdk += time.perf_counter() - t1
            raw += t1 - t0
        report(name, n, raw, sdk)
    await r.close()


def main():
    n = int(os.environ.get("BENCH_N", "50000"))
    with tempfile.TemporaryDirectory() as d:
        b = os.environ.get("RLSERVER_BIN")
        if not b:
            b = os.path.join(d, "rlserver")
            subprocess.run(["go", "build", "-o", b, "./cmd/rlserver"], cwd=ROOT, check=True)
        srv = Server(b)
        try:
            bench_sync(srv.url, n)
            asyncio.run(bench_async(srv.url, n))
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
