-- The live claimants sharing a family of shards (the reapers of the index shards): each holds a
-- fair share, so it must know how many there are. KEYS[1] = zset token -> when its claim lapses
-- (ms, Redis's clock), ARGV[1] = op, ARGV[2] = token:
--   join   ARGV[3] = ms: be live for ms more; lapsed claimants leave. Reply: how many are live.
--   leave  Reply: 1 if it was live, 0 otherwise.
-- The set holds one entry per coordinator alive within the last ms: a few, so every call is small.
-- Publishes nothing.
local op, token = ARGV[1], ARGV[2]
if op == 'join' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), token)
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
  return redis.call('ZCARD', KEYS[1])
elseif op == 'leave' then
  return redis.call('ZREM', KEYS[1], token)
end
return redis.error_reply('claimants: unknown op ' .. tostring(op))
