-- Deleted processes leave the global status and lease indexes (see index.lua): the index holds
-- live and retained processes only. KEYS[1] = <prefix>{idx<n>}:gen, ARGV[1] = <prefix>{idx<n>}:,
-- ARGV[2] = JSON [pid, ...], all of shard n. Whoever adds an index key for processes removes
-- the pid from it here too. Reply: the number dropped. Publishes nothing.
local base, dropped = ARGV[1], 0
for _, pid in ipairs(cjson.decode(ARGV[2])) do
  local cur = redis.call('HGET', KEYS[1], pid)
  if cur then
    local status = string.match(cur, '^%d+:(.*)$')
    if status then redis.call('ZREM', base .. 's:' .. status, pid) end
    redis.call('HDEL', KEYS[1], pid)
    dropped = dropped + 1
  end
  redis.call('ZREM', base .. 'all', pid)
  redis.call('ZREM', base .. 'roots', pid)
  redis.call('ZREM', base .. 'leases', pid)
end
return dropped
