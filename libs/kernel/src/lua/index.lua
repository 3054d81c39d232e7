-- The global status and lease indexes (derived, repairable). KEYS[1] = <prefix>{idx}:gen,
-- ARGV[1] = <prefix>{idx}:, ARGV[2] = JSON [[pid, gen, status, lease], ...]. A record older
-- than what the index holds (lower state_generation) cannot regress it. ARGV[3] (optional) =
-- JSON {outcome type: n}: worker completions to add to the metrics counter.
local base = ARGV[1]
for _, rec in ipairs(cjson.decode(ARGV[2])) do
  local pid, gen, status, lease = rec[1], rec[2], rec[3], rec[4]
  local cur = redis.call('HGET', KEYS[1], pid)
  local cg, cs = -1, nil
  if cur then
    local g, s = string.match(cur, '^(%d+):(.*)$')
    cg, cs = tonumber(g), s
  end
  if gen > cg then
    if cs and cs ~= status then redis.call('ZREM', base .. 's:' .. cs, pid) end
    redis.call('ZADD', base .. 's:' .. status, 0, pid)
    redis.call('ZADD', base .. 'all', 0, pid)
    redis.call('HSET', KEYS[1], pid, gen .. ':' .. status)
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
