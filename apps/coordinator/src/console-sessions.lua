-- A console login (see console-sessions.ts). KEYS[1] = <prefix>{console}:sessions, a sorted set of
-- session hashes scored by expiry (ms), kept only to bound how many sessions live at once.
-- ARGV: [1] the session keys' base `<prefix>{console}:s:`, [2] the new session's hash, [3] its
-- lifetime (ms), [4] the most sessions kept. Every key has the `{console}` tag: one slot.
-- Reply: the number of sessions ended to make room.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl, max = tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local over = redis.call('ZCARD', KEYS[1]) - max + 1
local ended = 0
if over > 0 then
  -- sessions do not slide: the earliest to expire is the oldest login
  for _, h in ipairs(redis.call('ZRANGE', KEYS[1], 0, over - 1)) do
    redis.call('DEL', ARGV[1] .. h)
    ended = ended + 1
  end
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, over - 1)
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[2])
redis.call('SET', ARGV[1] .. ARGV[2], '1', 'PX', ttl)
-- the set goes with the last session
redis.call('PEXPIRE', KEYS[1], ttl)
return ended
