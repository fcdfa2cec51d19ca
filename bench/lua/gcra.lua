-- GCRA: the allowN script of go-redis/redis_rate (v10), rewritten from the
-- public algorithm. One string key per limiter holding the theoretical
-- arrival time (TAT) as a float, seconds since 2017-01-01.
--
-- ARGV: burst, rate (per period), period (seconds), cost.
-- Returns {allowed, remaining, retry_after, reset_after} like redis_rate.
local rate_limit_key = KEYS[1]
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])

local emission_interval = period / rate
local increment = emission_interval * cost
local burst_offset = emission_interval * burst

-- TIME is {seconds, microseconds}; shift the epoch to 2017 to keep the
-- float's precision, as redis_rate does.
local jan_1_2017 = 1483228800
local now = redis.call('TIME')
now = (now[1] - jan_1_2017) + (now[2] / 1000000)

local tat = redis.call('GET', rate_limit_key)
if not tat then
  tat = now
else
  tat = tonumber(tat)
end
tat = math.max(tat, now)

local new_tat = tat + increment
local allow_at = new_tat - burst_offset
local diff = now - allow_at
local remaining = diff / emission_interval

if remaining < 0 then
  local reset_after = tat - now
  local retry_after = diff * -1
  return { 0, 0, tostring(retry_after), tostring(reset_after) }
end

local reset_after = new_tat - now
if reset_after > 0 then
  redis.call('SET', rate_limit_key, new_tat, 'EX', math.ceil(reset_after))
end
return { cost, math.floor(remaining), '-1', tostring(reset_after) }
