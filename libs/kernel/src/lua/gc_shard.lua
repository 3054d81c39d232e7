-- A retention sweep shard: which trees have processes due, and when. Trees are spread over a
-- fixed number of shards by their root pid; each shard is claimed by one coordinator at a time.
-- KEYS[1] = <prefix>{gc<n>}:trees (zset root -> when its next due process may go), ARGV[1] =
-- <prefix>{gc<n>}: (the shard's base: `v` hash root -> due-set version seen), ARGV[2] = op:
--   mark    ARGV[3] = JSON [[root, at, v], ...]: trees whose scripts recorded due processes
--           (the earlier time wins; the newest version is kept)
--   settle  ARGV[3] = root, ARGV[4] = v (the version the sweep read), ARGV[5] = next ('' none):
--           after a sweep of the tree; a mark newer than v is kept (it may name work the sweep
--           did not see), otherwise the tree's time becomes `next` or it leaves the shard
-- The shard's `lock` (one sweeper at a time) is lock.lua's. Reply: 1. Publishes nothing.
local base, op = ARGV[1], ARGV[2]
if op == 'mark' then
  for _, m in ipairs(cjson.decode(ARGV[3])) do
    redis.call('ZADD', KEYS[1], 'LT', m[2], m[1])
    local seen = tonumber(redis.call('HGET', base .. 'v', m[1]) or '-1')
    if m[3] > seen then redis.call('HSET', base .. 'v', m[1], m[3]) end
  end
  return 1
elseif op == 'settle' then
  local root, v, nxt = ARGV[3], tonumber(ARGV[4]), ARGV[5]
  local seen = tonumber(redis.call('HGET', base .. 'v', root) or '-1')
  if seen > v then
    if nxt ~= '' then redis.call('ZADD', KEYS[1], 'LT', nxt, root) end
  elseif nxt ~= '' then
    redis.call('ZADD', KEYS[1], nxt, root)
  else
    redis.call('ZREM', KEYS[1], root)
    redis.call('HDEL', base .. 'v', root)
  end
  return 1
end
return redis.error_reply('gc_shard: unknown op ' .. tostring(op))
