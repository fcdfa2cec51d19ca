-- Sliding window counter (Cloudflare's approximation): epoch-aligned fixed
-- windows; the estimate is the previous window's count weighted by the part
-- of it still inside (now - window, now], plus the current count. One small
-- hash per limiter: w = current window index, c = its count, p = the
-- previous window's count. Time from redis.call('TIME').
--
-- ARGV: limit, window (ms), cost.
-- Returns {allowed, limit, remaining, retry_after_ms, reset_after_ms}.
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local idx = math.floor(now / window)
local elapsed = now - idx * window

local v = redis.call('HMGET', key, 'w', 'c', 'p')
local w = tonumber(v[1])
local c = tonumber(v[2]) or 0
local p = tonumber(v[3]) or 0
if w == nil then
  c, p = 0, 0
elseif w == idx - 1 then
  c, p = 0, c
elseif w ~= idx then
  c, p = 0, 0
end

local estimate = p * (window - elapsed) / window + c
local reset = 2 * window - elapsed
if estimate + cost > limit then
  local remaining = math.max(0, math.floor(limit - estimate))
  return { 0, limit, remaining, window - elapsed, reset }
end
c = c + cost
redis.call('HSET', key, 'w', idx, 'c', c, 'p', p)
redis.call('PEXPIRE', key, reset)
return { 1, limit, math.max(0, math.floor(limit - estimate - cost)), 0, reset }
