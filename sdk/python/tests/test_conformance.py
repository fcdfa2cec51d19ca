"""The shared conformance cases through the typed API, sync (Client over
redis.Redis) and async (AsyncClient over redis.asyncio.Redis), as sdk/go runs
them: one step runner, whose calls are awaited when they return awaitables.
Then the adapters' cases once more through the `limits` storages, sync
(rlserver://) and async (async+rlserver://): the file's README, "Through a
store"."""
import asyncio
import inspect
import json
import re
import time
from pathlib import Path

import pytest
import redis
import redis.asyncio

from rlserver import AsyncClient, Client, header_fields
from rlserver._limiters import Lease
from rlserver.limits_storage import AsyncRlserverStorage, RlserverStorage

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


# Through a store: each CL.WINDOW step of an adapters case is a call of the
# limits storage on that key, whose answer must be what limits expects of the
# step's decision [allowed, limit, remaining, retry_after_ms, reset_after_ms].
# FIXED: a hit of n is incr(amount=n), counting limit - remaining when
# admitted and limit + n when denied (not counted); a peek is get() (limit -
# remaining) and get_expiry() (reset_after_ms from now). LOG: a hit is
# acquire_entry (allowed), a peek get_moving_window: (when the newest entry
# came, limit - remaining), or (now, 0) when empty. DEL is clear(); other
# commands are sent as they are. The storage's key is the one limits builds,
# "<case key>/<limit>/<window seconds>/second", without a prefix. SLIDING has
# no limits strategy of its own.

def limits_key(w):
    return f"{w[1]}/{w[2]}/{ms(w[3]) // 1000}/second"


def storage_can_run(case):
    for st in case["steps"]:
        c = st.get("command")
        if c and c[0].upper().startswith("CL.") and not (c[0].upper() == "CL.WINDOW" and len(c) > 5
                                                           and c[5].upper() in ("FIXED", "LOG") and ms(c[3]) % 1000 == 0):
            return False
    return True


def key_map(case):
    """The case's keys -> the storage's keys (from the first CL.WINDOW step of each)."""
    out = {}
    for st in case["steps"]:
        c = st.get("command")
        if c and c[0].upper() == "CL.WINDOW":
            out.setdefault(c[1], limits_key(c))
    return out


async def storage_step(storage, keys, i, st):
    c = st["command"]
    if c[0].upper() != "CL.WINDOW":
        if c[0].upper() == "DEL":
            return await res(storage.clear(keys.get(c[1], c[1])))
        got = await res(storage.redis.execute_command(c[0], keys.get(c[1], c[1]), *c[2:]))
        assert got == st["reply"], f"step {i}: {c}"
        return
    a, limit, remaining, _, reset = st["decision"]
    key, window_s, n, mode = limits_key(c), ms(c[3]) // 1000, int(c[4]), c[5].upper()
    t0 = time.time()
    if mode == "FIXED" and n > 0:
        assert await res(storage.incr(key, window_s, amount=n)) == (limit - remaining if a else limit + n), f"step {i}: {c}"
    elif mode == "FIXED":
        assert await res(storage.get(key)) == limit - remaining, f"step {i}: {c}"
        expiry = await res(storage.get_expiry(key))
        assert int(t0 + reset / 1000) <= expiry <= int(time.time() + reset / 1000), f"step {i}: {c}: expiry {expiry}"
    elif n > 0:
        assert await res(storage.acquire_entry(key, limit, window_s, amount=n)) is (a == 1), f"step {i}: {c}"
    else:
        start, count = await res(storage.get_moving_window(key, limit, window_s))
        assert count == limit - remaining, f"step {i}: {c}"
        lo, hi = (t0, time.time()) if count == 0 else (t0 + reset / 1000 - window_s, time.time() + reset / 1000 - window_s)
        assert int(lo) <= start <= int(hi), f"step {i}: {c}: start {start}"


async def run_storage_case(storage, admin, case):
    await res(admin.flushall())
    await res(admin.execute_command("DEBUG", "CLOCK", "SET", FILE["start_unix_ms"]))
    keys = key_map(case)
    for i, st in enumerate(case["steps"]):
        if "advance_ms" in st:
            await res(admin.execute_command("DEBUG", "CLOCK", "ADVANCE", st["advance_ms"]))
        else:
            await storage_step(storage, keys, i, st)


STORAGE_CASES = [c for c in FILE["cases"] if c["name"].startswith("adapters:") and storage_can_run(c)]
STORAGE = pytest.mark.parametrize("case", STORAGE_CASES, ids=[c["name"] for c in STORAGE_CASES])


def test_storage_cases_are_those_of_fixed_and_log_windows():
    adapters = [c["name"] for c in FILE["cases"] if c["name"].startswith("adapters:")]
    sliding = [c["name"] for c in FILE["cases"] if c["name"].startswith("adapters:") and not storage_can_run(c)]
    assert [c["name"] for c in STORAGE_CASES] == [n for n in adapters if n not in sliding]
    assert len(STORAGE_CASES) >= 4 and all("SLIDING" in n for n in sliding)


@STORAGE
def test_conformance_limits_storage(server, case):
    storage = RlserverStorage(server.url.replace("redis://", "rlserver://"), prefix="")
    try:
        asyncio.run(run_storage_case(storage, storage.redis, case))
    finally:
        storage.redis.close()


@STORAGE
def test_conformance_limits_async_storage(server, case):
    async def main():
        storage = AsyncRlserverStorage(server.url.replace("redis://", "async+rlserver://"), prefix="")
        try:
            await run_storage_case(storage, storage.redis, case)
        finally:
            await storage.redis.close()
    asyncio.run(main())
