-- ---------------------------------------------------------------- retention
-- A terminal process may be deleted a retention period after it ended (`et`) once nothing can
-- still ask for it: it has no children left (they go first), and it is a root, or its parent
-- has waited on it (`wd`) or merged it, or its parent is terminal or gone. Such a process is in
-- the tree's due set `B due` (score = its end); the sweep (gc.lua) deletes the ones whose end is
-- a retention period (`ret` in the tree's counter hash) in the past. Whatever makes a process
-- eligible calls `retain` (its terminal transition, its parent's wait, merge or terminal, the
-- deletion of its last child), so the due set holds only processes that may go.

local function retain_eligible(pid, r)
  if not TERMINAL[r.status] then return false end
  if redis.call('EXISTS', kkey(pid)) == 1 then return false end
  if r.parent == '' or r.merged == '1' or r.wd == '1' then return true end
  local ps = redis.call('HGET', pkey(r.parent), 'status')
  return (not ps) or TERMINAL[ps] == true
end

-- Record `pid` as due when it is eligible; the reply's `gc` tells the sweep shard when.
local function retain(pid, r)
  if not retain_eligible(pid, r) then return end
  local ended = tonumber(r.et or '') or tonumber(r.ut or '') or now()
  redis.call('ZADD', B .. 'due', ended, pid)
  local v = redis.call('HINCRBY', KEYS[1], 'gcv', 1)
  local at = ended + (tonumber(redis.call('HGET', KEYS[1], 'ret') or '') or 0)
  if not GC or at < GC.at then GC = { at = at, v = v } else GC.v = v end
end

-- Fields `retain` reads from a row.
local RETAIN_FIELDS = { 'status', 'parent', 'et', 'ut', 'merged', 'wd' }
