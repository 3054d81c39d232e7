-- One shard of the global status and lease indexes (derived, repairable): the records of the
-- trees whose root falls in the shard, under `base` (<prefix>{idx<n>}:); `base .. 'gen'` holds
-- each pid's newest `gen:status`. A record is [pid, gen, status, lease, created?]; one older than
-- what the index holds (lower state_generation) cannot regress it.
-- `all`, `roots` (root pids) and `s:<status>` are scored by creation time (ms), so listings run
-- newest first; `created` comes with a row's first record (and with any record whose script
-- loaded the whole row). A record without it takes the score `all` already holds (0 until the
-- first record lands: records of one process may arrive out of order from different parts).
-- Applied by index.lua (the kernel's batches), and by a tree script itself when the kernel gives
-- it the shard (one Redis server, where any key is reachable; see lib.lua's reply).
local function index_apply(base, records)
  local gens = base .. 'gen'
  for _, rec in ipairs(records) do
    local pid, gen, status, lease, created = rec[1], rec[2], rec[3], rec[4], rec[5]
    local cur = redis.call('HGET', gens, pid)
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
      redis.call('HSET', gens, pid, gen .. ':' .. status)
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
end

-- Worker completions counted by outcome type (derived, for metrics; summed over the shards).
local function index_count(base, outcome, n)
  redis.call('HINCRBY', base .. 'outcomes', outcome, n)
end
