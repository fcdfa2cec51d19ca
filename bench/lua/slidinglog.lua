-- Sliding log: one sorted set per limiter, a member per admitted unit scored
-- by its admission time in microseconds (redis.call('TIME')). Entries older
-- than the window are trimmed on every call; the key expires when its newest
-- entry leaves the window.
--
-- ARGV: limit, window (ms), cost.
-- Returns {allowed, limit, remaining, retry_after_ms, reset_after_ms}.
local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window_us = tonumber(ARGV[2]) * 1000
local cost = tonumber(ARGV[3])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window_us)
local count = redis.call('ZCARD', key)
if count + cost > limit then
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  local retry = 0
  if oldest[2] then
    retry = math.ceil((tonumber(oldest[2]) + window_us - now) / 1000)
  end
  return { 0, limit, limit - count, retry, math.ceil(window_us / 1000) }
end
for i = 1, cost do
  redis.call('ZADD', key, now, now .. '-' .. (count + i))
end
redis.call('PEXPIRE', key, math.ceil(window_us / 1000))
return { 1, limit, limit - count - cost, 0, math.ceil(window_us / 1000) }
