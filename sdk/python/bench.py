#!/usr/bin/env python3
"""The SDK's overhead per decision over the raw redis-py call it makes, as
sdk/go/bench_test.go and sdk/node's `npm run bench` measure it: the raw
execute_command("CL.TOKENBUCKET", ...) and the SDK's allow() alternate on one
connection to a local server (so load on the machine hits both alike); prints
the SDK's extra time as a percentage of the raw call's, for Client (sync) and
AsyncClient (asyncio, with and without a per-call timeout). Each variant runs
BENCH_ROUNDS rounds (5) of BENCH_N pairs (10000), the variants taking turns,
and the median round is printed with every round's overhead.

    cd sdk/python && /usr/bin/python3 bench.py

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


def report(name, rounds):
    """rounds: (raw seconds, sdk seconds, n) per round; the median round by overhead."""
    ovh = sorted((100 * (sdk - raw) / raw, raw / n, sdk / n) for raw, sdk, n in rounds)
    o, raw, sdk = ovh[len(ovh) // 2]
    each = " ".join(f"{x[0]:.1f}" for x in ovh)
    print(f"{name}: raw {raw * 1e9:.0f} ns/op, sdk {sdk * 1e9:.0f} ns/op, overhead {o:.2f}% (median of {len(ovh)} rounds: {each})")


def bench_sync(url, n, rounds):
    r = redis.Redis.from_url(url)
    variants = [("sync", Client(r)), ("sync failure=open", Client(r, failure="open"))]
    res = {name: [] for name, _ in variants}
    for _ in range(rounds):
        for name, c in variants:
            tb = c.token_bucket(1000000, 1000000, 1000)
            tb.allow("bench")
            raw = sdk = 0.0
            for _ in range(n):
                t0 = time.perf_counter()
                r.execute_command(*ARGS)
                t1 = time.perf_counter()
                tb.allow("bench")
                sdk += time.perf_counter() - t1
                raw += t1 - t0
            res[name].append((raw, sdk, n))
    for name, rs in res.items():
        report(name, rs)
    r.close()


async def bench_async(url, n, rounds):
    r = redis.asyncio.Redis.from_url(url)
    variants = [("async", AsyncClient(r)), ("async timeout=1s", AsyncClient(r, timeout=1.0)),
                ("async timeout=50ms failure=open", AsyncClient(r, timeout=0.05, failure="open"))]
    res = {name: [] for name, _ in variants}
    for _ in range(rounds):
        for name, c in variants:
            tb = c.token_bucket(1000000, 1000000, 1000)
            await tb.allow("bench")
            raw = sdk = 0.0
            for _ in range(n):
                t0 = time.perf_counter()
                await r.execute_command(*ARGS)  # unbounded, as in the Node bench: the timeout's cost counts as the SDK's
                t1 = time.perf_counter()
                await tb.allow("bench")
                sdk += time.perf_counter() - t1
                raw += t1 - t0
            res[name].append((raw, sdk, n))
    for name, rs in res.items():
        report(name, rs)
    await r.close()


def main():
    n = int(os.environ.get("BENCH_N", "10000"))
    rounds = int(os.environ.get("BENCH_ROUNDS", "5"))
    with tempfile.TemporaryDirectory() as d:
        b = os.environ.get("RLSERVER_BIN")
        if not b:
            b = os.path.join(d, "rlserver")
            subprocess.run(["go", "build", "-o", b, "./cmd/rlserver"], cwd=ROOT, check=True)
        srv = Server(b)
        try:
            bench_sync(srv.url, n, rounds)
            asyncio.run(bench_async(srv.url, n, rounds))
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
