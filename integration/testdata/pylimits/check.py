#!/usr/bin/env python3
"""Drives Python's `limits` (Debian python3-limits 2.8.0) with its Redis
storage, every strategy that version has (fixed window, fixed window with
elastic expiry, moving window; 2.8 has no sliding window counter), and
Flask-Limiter (python3-flask-limiter 3.3.0) on a redis:// storage_uri,
against the server at the URL given, and prints a deterministic transcript:
one line per operation with its result.

Usage: check.py redis://127.0.0.1:PORT

The libraries run unchanged; only their clock is pinned: `time` in
limits.storage.redis and flask_limiter.extension is replaced by a clock the
script advances, so that moving-window entries (client timestamps) are exact
and a window can slide without waiting. The server's expiry runs on real
time: the windows are a minute or an hour, so nothing expires while this
runs, and the one real wait (1.2 s, to tell fixed from elastic expiry) is
far from every boundary. Times are printed relative to the pinned start, T0.
"""

import sys
import time as _time

import limits
import limits.storage.redis as limits_redis
import redis
from limits import parse
from limits.storage import RedisStorage, storage_from_string
from limits.strategies import (
    STRATEGIES,
    FixedWindowElasticExpiryRateLimiter,
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
)

T0 = 1767225600.125  # 2026-01-01T00:00:00.125Z, exact in binary


class Clock:
    """Stands for the time module: time() is pinned, the rest is real."""

    def __init__(self, now):
        self.now = now

    def time(self):
        return self.now

    def __getattr__(self, name):
        return getattr(_time, name)


clock = Clock(T0)
limits_redis.time = clock

out = []


def line(*parts):
    out.append(" ".join(str(p) for p in parts))


def rel(ts):
    """A reset time relative to T0's second."""
    return int(ts) - int(T0)


def at(offset):
    clock.now = T0 + offset


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check.py redis://host:port")
    url = sys.argv[1]
    raw = redis.from_url(url, decode_responses=True)
    raw.flushall()
    line("limits", limits.__version__, "strategies", " ".join(sorted(STRATEGIES)))
    line("sliding window counter in this version:",
         hasattr(limits.strategies, "SlidingWindowCounterRateLimiter"))

    storage = storage_from_string(url)
    line("storage", type(storage).__name__, isinstance(storage, RedisStorage),
         "check", storage.check())

    fixed_window(storage, raw)
    elastic_expiry(storage, raw)
    moving_window(storage, raw)

    # reset() runs clear_keys.lua: KEYS LIMITER* then DEL, inside a script.
    keys = sorted(raw.keys("LIMITER*"))
    line("keys before reset", len(keys), keys)
    line("storage.reset()", storage.reset())
    line("keys after reset", sorted(raw.keys("*")))

    flask_limiter_apps(url, raw)
    print("\n".join(out))


def fixed_window(storage, raw):
    at(0)
    fw = FixedWindowRateLimiter(storage)
    item = parse("5/minute")
    key = item.key_for("fixed", "u1")
    line("fixed key", key)
    reset, remaining = fw.get_window_stats(item, "fixed", "u1")
    line("fixed stats before", "reset", rel(reset), "remaining", remaining,
         "test", fw.test(item, "fixed", "u1"))
    admitted = 0
    for i in range(1, 8):
        ok = fw.hit(item, "fixed", "u1")
        admitted += ok
        reset, remaining = fw.get_window_stats(item, "fixed", "u1")
        line(f"fixed hit {i}", ok, "test", fw.test(item, "fixed", "u1"),
             "reset", rel(reset), "remaining", remaining)
    line("fixed admitted", admitted, "of 7")
    line("fixed GET", raw.get(key), "TTL", raw.ttl(key))

    # cost: 10/hour, hits of 3. The counter goes on counting denied hits.
    item = parse("10/hour")
    admitted = 0
    for i in range(1, 6):
        ok = fw.hit(item, "fixed", "u2", cost=3)
        admitted += ok
        reset, remaining = fw.get_window_stats(item, "fixed", "u2")
        line(f"fixed cost 3 hit {i}", ok, "reset", rel(reset), "remaining", remaining)
    line("fixed cost admitted", admitted, "of 5")
    line("fixed cost GET", raw.get(item.key_for("fixed", "u2")),
         "TTL", raw.ttl(item.key_for("fixed", "u2")))
    fw.clear(item, "fixed", "u2")
    line("fixed cost after clear", "EXISTS", raw.exists(item.key_for("fixed", "u2")),
         "test", fw.test(item, "fixed", "u2"),
         "stats", fw.get_window_stats(item, "fixed", "u2")[1])
    line("fixed cost hit after clear", fw.hit(item, "fixed", "u2", cost=10),
         fw.hit(item, "fixed", "u2"))

    # 2/hour on its own key, for the real wait in elastic_expiry.
    ok = [fw.hit(parse("2/hour"), "fixed", "u3") for _ in range(3)]
    line("fixed 2/hour hits", ok)


def elastic_expiry(storage, raw):
    at(0)
    ee = FixedWindowElasticExpiryRateLimiter(storage)
    item = parse("3/minute")
    key = item.key_for("elastic", "u1")
    admitted = 0
    for i in range(1, 6):
        ok = ee.hit(item, "elastic", "u1")
        admitted += ok
        reset, remaining = ee.get_window_stats(item, "elastic", "u1")
        line(f"elastic hit {i}", ok, "test", ee.test(item, "elastic", "u1"),
             "reset", rel(reset), "remaining", remaining)
    line("elastic admitted", admitted, "of 5")
    line("elastic GET", raw.get(key), "TTL", raw.ttl(key))

    # Elastic expiry re-arms the expiry on every hit (INCRBY + EXPIRE);
    # the fixed window sets it once (incr_expire.lua). 1.2 s later a hit
    # on each: the elastic key is back to 3600 s, the fixed one at 3599.
    elastic_hour = parse("2/hour")
    ee.hit(elastic_hour, "elastic", "u2")
    _time.sleep(1.2)  # real time, for the server's expiry
    line("elastic 2/hour hits", ee.hit(elastic_hour, "elastic", "u2"),
         ee.hit(elastic_hour, "elastic", "u2"))
    fixed_key = parse("2/hour").key_for("fixed", "u3")
    FixedWindowRateLimiter(storage).hit(parse("2/hour"), "fixed", "u3")
    line("after 1.2 s: TTL elastic", raw.ttl(elastic_hour.key_for("elastic", "u2")),
         "TTL fixed", raw.ttl(fixed_key),
         "GET elastic", raw.get(elastic_hour.key_for("elastic", "u2")),
         "GET fixed", raw.get(fixed_key))


def moving_window(storage, raw):
    mw = MovingWindowRateLimiter(storage)
    item = parse("3/minute")
    key = item.key_for("moving", "u1")
    at(0)
    reset, remaining = mw.get_window_stats(item, "moving", "u1")
    line("moving stats before", "reset", rel(reset), "remaining", remaining,
         "test", mw.test(item, "moving", "u1"))
    admitted = 0
    for offset in (0, 10, 20, 30, 40):
        at(offset)
        ok = mw.hit(item, "moving", "u1")
        admitted += ok
        reset, remaining = mw.get_window_stats(item, "moving", "u1")
        line(f"moving hit t+{offset}", ok, "test", mw.test(item, "moving", "u1"),
             "reset", rel(reset), "remaining", remaining)
    line("moving admitted", admitted, "of 5")
    # The entries are the client's timestamps, pushed by the script as Lua
    # numbers (tonumber(ARGV[1])): Redis writes them as 1767225600.125.
    line("moving LRANGE", raw.lrange(key, 0, -1), "TTL", raw.ttl(key))
    line("moving window", storage.get_moving_window(key, 3, 60))
    # The window slides: at t+61 the entry of t+0 has left it.
    for offset in (61, 62, 70, 81):
        at(offset)
        ok = mw.hit(item, "moving", "u1")
        reset, remaining = mw.get_window_stats(item, "moving", "u1")
        line(f"moving hit t+{offset}", ok, "reset", rel(reset), "remaining", remaining)
    line("moving LRANGE", raw.lrange(key, 0, -1))
    # cost 2: at t+85 the entry of t+61 is in the window, at t+122 not.
    for offset in (85, 122, 123):
        at(offset)
        ok = mw.hit(item, "moving", "u1", cost=2)
        reset, remaining = mw.get_window_stats(item, "moving", "u1")
        line(f"moving cost 2 hit t+{offset}", ok, "reset", rel(reset), "remaining", remaining)
    line("moving LRANGE", raw.lrange(key, 0, -1))
    # cost above the limit: LINDEX at a negative index (the oldest entry).
    line("moving cost 4 at t+123", mw.hit(item, "moving", "u1", cost=4))
    at(200)
    line("moving cost 4 at t+200, every entry out of the window",
         mw.hit(item, "moving", "u1", cost=4), "LRANGE", raw.lrange(key, 0, -1))
    line("moving cost 4 on an empty key", mw.hit(item, "moving", "u2", cost=4),
         "LRANGE", raw.lrange(item.key_for("moving", "u2"), 0, -1))
    mw.clear(item, "moving", "u1")
    line("moving after clear", "EXISTS", raw.exists(key),
         "stats", mw.get_window_stats(item, "moving", "u1")[1])
    # 2 per hour, a long window.
    at(300)
    hour = parse("2/hour")
    hits = [mw.hit(hour, "moving", "u3") for _ in range(4)]
    line("moving 2/hour hits", hits, "stats", mw.get_window_stats(hour, "moving", "u3")[1],
         "TTL", raw.ttl(hour.key_for("moving", "u3")))


def flask_limiter_apps(url, raw):
    import flask
    import flask_limiter
    import flask_limiter.extension
    from flask_limiter import Limiter
    from flask_limiter.util import get_remote_address

    flask_limiter.extension.time = clock
    line("flask_limiter", flask_limiter.__version__)
    for strategy in ("fixed-window", "fixed-window-elastic-expiry", "moving-window"):
        at(1000)
        app = flask.Flask(f"app_{strategy}")
        limiter = Limiter(
            get_remote_address,
            app=app,
            storage_uri=url,
            strategy=strategy,
            headers_enabled=True,
            default_limits=["2/hour"],
            key_prefix=strategy,
        )

        @app.route("/five")
        @limiter.limit("5/minute")
        def five():
            return "five"

        @app.route("/costly")
        @limiter.limit("5/minute", cost=2)
        def costly():
            return "costly"

        @app.route("/default")
        def default():
            return "default"

        @app.route("/free")
        @limiter.exempt
        def free():
            return "free"

        client = app.test_client()

        def get(path, n):
            admitted = 0
            for i in range(1, n + 1):
                r = client.get(path)
                admitted += r.status_code == 200
                h = r.headers
                line(f"flask {strategy} GET {path} #{i}", r.status_code,
                     "limit", h.get("X-RateLimit-Limit"),
                     "remaining", h.get("X-RateLimit-Remaining"),
                     "reset", rel(int(h["X-RateLimit-Reset"])) if "X-RateLimit-Reset" in h else None,
                     "retry-after", h.get("Retry-After"))
            line(f"flask {strategy} {path} admitted", admitted, "of", n)

        get("/five", 7)
        get("/costly", 4)
        get("/default", 3)
        get("/free", 3)
        line(f"flask {strategy} keys", sorted(raw.keys(f"LIMITER/{strategy}/*")))


if __name__ == "__main__":
    main()
