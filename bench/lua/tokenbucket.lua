-- Token bucket: the Spring Cloud Gateway RedisRateLimiter script
-- (request_rate_limiter.lua, itself after Stripe's "scaling your API with
-- rate limiters"), rewritten from the public algorithm. Two string keys per
-- limiter, as in Spring: KEYS[1] tokens, KEYS[2] last refill timestamp.
-- The only change: time comes from redis.call('TIME') with microsecond
-- resolution (Spring uses whole seconds of TIME), so that it is comparable
-- with rlserver's nanosecond clock.
--
-- ARGV: replenish rate (tokens per second), capacity, requested tokens.
-- Returns {allowed, capacity, remaining, -1, -1} (Spring returns
-- {allowed, new_tokens}; the padding only keeps reply sizes comparable).
local tokens_key = KEYS[1]
local timestamp_key = KEYS[2]
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local requested = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000

local fill_time = capacity / rate
local ttl = math.floor(fill_time * 2)
if ttl < 1 then ttl = 1 end

local last_tokens = tonumber(redis.call('GET', tokens_key))
if last_tokens == nil then
  last_tokens = capacity
end
local last_refreshed = tonumber(redis.call('GET', timestamp_key))
if last_refreshed == nil then
  last_refreshed = 0
end

local delta = math.max(0, now - last_refreshed)
local filled_tokens = math.min(capacity, last_tokens + (delta * rate))
local allowed = filled_tokens >= requested
local new_tokens = filled_tokens
local allowed_num = 0
if allowed then
  new_tokens = filled_tokens - requested
  allowed_num = 1
end

redis.call('SETEX', tokens_key, ttl, new_tokens)
redis.call('SETEX', timestamp_key, ttl, now)

return { allowed_num, capacity, math.floor(new_tokens), -1, -1 }
