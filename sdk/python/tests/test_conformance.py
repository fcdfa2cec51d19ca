"""The shared conformance cases through the typed API, sync (Client over
redis.Redis) and async (AsyncClient over redis.asyncio.Redis), as sdk/go runs
them: one step runner, whose calls are awaited when they return awaitables."""
import asyncio
import inspect
import json
import re
from pathlib import Path

import pytest
import redis
import redis.asyncio

from rlserver import AsyncClient, Client, header_fields
from rlserver._limiters import Lease

FILE = json.loads((Path(__file__).resolve().parents[2] / "conformance" / "cases.json").read_text())
HEADERS = ["RateLimit", "RateLimit-Policy", "Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"]


def ms(s):
    m = re.fullmatch(r"(\d+)(ms|s|m|h|d)?", s)
    return int(m.group(1)) * {"ms": 1, "s": 1000, "m": 60000, "h": 3600000, "d": 86400000}[m.group(2) or "s"]


def ints(d):
    return [1 if d.allowed else 0, d.limit, d.remaining, d.retry_after_ms, d.reset_after_ms]


def rule_of(c, w):
    n = w[0].upper()
    if n == "TOKENBUCKET":
        return c.token_bucket(int(w[2]), int(w[3]), ms(w[4])).rule_for(w[1]), 5
    if n == "THROTTLE":
        return c.throttle(int(w[2]), int(w[3]), ms(w[4])).rule_for(w[1]), 5
    if n == "LEAKYBUCKET":
        return c.leaky_bucket(int(w[2]), int(w[3]), ms(w[4])).rule_for(w[1]), 5
    if n in ("FIXED", "SLIDING", "LOG"):
        return c.window(n.lower(), int(w[2]), ms(w[3])).rule_for(w[1]), 4
    return c.concurrency(int(w[2]), ms(w[3])).rule_for(w[1]), 4


async def res(x):
    return await x if inspect.isawaitable(x) else x


async def run_step(c, r, cmd, st):
    got = {}
    opt = lambda i, d: int(cmd[i]) if i < len(cmd) else d
    name = cmd[0].upper()
    try:
        if name == "CL.TOKENBUCKET":
            lim = c.token_bucket(int(cmd[2]), int(cmd[3]), ms(cmd[4]))
            d = await res(lim.reserve(cmd[1], int(cmd[5]), ms(cmd[7])) if len(cmd) > 7 and cmd[6].upper() == "RESERVE" else lim.allow(cmd[1], opt(5, 1)))
        elif name == "CL.LEAKYBUCKET":
            lim = c.leaky_bucket(int(cmd[2]), int(cmd[3]), ms(cmd[4]))
            d = await res(lim.allow(cmd[1], opt(5, 1)))
        elif name == "CL.WINDOW":
            lim = c.window(cmd[5].lower() if len(cmd) > 5 else "sliding", int(cmd[2]), ms(cmd[3]))
            d = await res(lim.allow(cmd[1], opt(4, 1)))
        elif name == "CL.ACQUIRE":
            lim = c.concurrency(int(cmd[2]), ms(cmd[3]))
            lease, d = await res(lim.acquire(cmd[1], opt(4, 1)))
            got["lease"] = lease is not None
            if lease:
                st["lease"] = lease.id
        elif name == "CL.ALL":
            w, rules = cmd[2:], []
            for _ in range(int(cmd[1])):
                rl, k = rule_of(c, w)
                rules.append(rl)
                w = w[k:]
            cost = int(w[1]) if len(w) == 2 and w[0].upper() == "COST" else 1
            ok, ds, leases = await res(c.all(cost, rules))
            for le in leases:
                if le:
                    st["lease"] = le.id
            return {"all": {"allowed": 1 if ok else 0, "decisions": [ints(x) for x in ds]}}
        elif name in ("CL.RELEASE", "CL.RENEW"):
            le = Lease(c, st["lease"], cmd[1], 1, None)
            ok = await res(le.release() if name == "CL.RELEASE" else le.renew(ms(cmd[3])))
            return {"reply": 1 if ok else 0}
        else:
            return {"reply": await res(r.execute_command(*cmd))}
    except redis.ResponseError as e:
        return {"error": str(e).split(" ")[0]}
    got["decision"] = ints(d)
    h = header_fields(FILE["policy"], lim.window_ms, d, True)
    got["headers"] = {k: h[k] for k in HEADERS if k in h}
    return got


async def run_case(c, r, case):
    await res(r.flushall())
    await res(r.execute_command("DEBUG", "CLOCK", "SET", FILE["start_unix_ms"]))
    st = {"lease": ""}
    for i, step in enumerate(case["steps"]):
        if "advance_ms" in step:
            await res(r.execute_command("DEBUG", "CLOCK", "ADVANCE", step["advance_ms"]))
            continue
        cmd = [a.replace("$lease", st["lease"]) for a in step["command"]]
        want = {k: v for k, v in step.items() if k != "command"}
        assert await run_step(c, r, cmd, st) == want, f"step {i}: {step['command']}"


CASES = pytest.mark.parametrize("case", FILE["cases"], ids=[c["name"] for c in FILE["cases"]])


@CASES
def test_conformance(server, case):
    r = redis.Redis.from_url(server.url)
    try:
        asyncio.run(run_case(Client(r), r, case))
    finally:
        r.close()


@CASES
def test_conformance_async(server, case):
    async def main():
        r = redis.asyncio.Redis.from_url(server.url)
        try:
            await run_case(AsyncClient(r, timeout=5), r, case)
        finally:
            await r.close()
    asyncio.run(main())
