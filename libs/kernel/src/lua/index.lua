-- One shard of the global status and lease indexes (derived, repairable): the records of the
-- trees whose root falls in shard n. KEYS[1] = <prefix>{idx<n>}:gen, ARGV[1] = <prefix>{idx<n>}:,
-- ARGV[2] = JSON [[pid, gen, status, lease, created?], ...]. A record
-- older than what the index holds (lower state_generation) cannot regress it. ARGV[3] (optional)
-- = JSON {outcome type: n}: worker completions to add to the metrics counter.
-- `all`, `roots` (root pids) and `s:<status>` are scored by creation time (ms), so listings run
-- newest first; `created` comes with a row's first record (and with any record whose script
-- loaded the whole row). A record without it takes the score `all` already holds (0 until the
-- first record lands: records of one process may arrive out of order from different parts).
local base = ARGV[1]
for _, rec in ipairs(cjson.decode(ARGV[2])) do
  local pid, gen, status, lease, created = rec[1], rec[2], rec[3], rec[4], rec[5]
  local cur = redis.call('HGET', KEYS[1], pid)
  local cg, cs = -1, nil
  if cur then
    local g, s = string.match(cur, '^(%d+):(.*)$')
    cg, cs = tonumber(g), s
  end
  local score = created or tonumber(redis.call('ZSCORE', base .. 'all', pid)) or 0
  local root = not string.find(pid, '.', 1, true)
  if gen > cg then
    if cs and cs ~= status then redis.call('ZREM', base .. 's:' .. cs, pid) end
    redis.call('ZADD', base .. 's:' .. status, score, pid)
    redis.call('ZADD', base .. 'all', score, pid)
    if root then redis.call('ZADD', base .. 'roots', score, pid) end
    redis.call('HSET', KEYS[1], pid, gen .. ':' .. status)
  elseif created then
    -- an older record still brings the creation time a newer one may have lacked
    redis.call('ZADD', base .. 'all', score, pid)
    if root then redis.call('ZADD', base .. 'roots', score, pid) end
    if cs then redis.call('ZADD', base .. 's:' .. cs, 'XX', score, pid) end
  end
  if gen >= cg then
    if lease > 0 then
      redis.call('ZADD', base .. 'leases', lease, pid)
    else
      redis.call('ZREM', base .. 'leases', pid)
    end
  end
end
if ARGV[3] then
  for outcome, n in pairs(cjson.decode(ARGV[3])) do redis.call('HINCRBY', base .. 'outcomes', outcome, n) end
end
return 1
