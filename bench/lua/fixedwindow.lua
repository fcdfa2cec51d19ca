-- Fixed window: the classic INCR + EXPIRE counter. One string key per
-- limiter; the window starts at the first admitted request and Redis's own
-- expiry ends it. A request that would exceed the limit is denied without
-- counting (rlserver's contract: denials consume nothing).
--
-- ARGV: limit, window (ms), cost.
-- Returns {allowed, limit, remaining, retry_after_ms, reset_after_ms}.
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])

local current = tonumber(redis.call('GET', key) or '0')
if current + cost > limit then
  local ttl = redis.call('PTTL', key)
  return { 0, limit, limit - current, ttl, ttl }
end
local value = redis.call('INCRBY', key, cost)
if value == cost then
  redis.call('PEXPIRE', key, window)
end
local ttl = redis.call('PTTL', key)
return { 1, limit, limit - value, 0, ttl }
