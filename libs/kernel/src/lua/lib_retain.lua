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

-- The reply's `gc`: the sweep shard is to visit the tree at `at` (the earliest wins), with a new
-- due-set version (so a sweep that read an older one keeps the tree marked).
local function gc_mark(at)
  local v = redis.call('HINCRBY', KEYS[1], 'gcv', 1)
  if not GC or at < GC.at then GC = { at = at, v = v } else GC.v = v end
end

-- Record `pid` as due when it is eligible; the reply's `gc` tells the sweep shard when.
local function retain(pid, r)
  if not retain_eligible(pid, r) then return end
  local ended = tonumber(r.et or '') or tonumber(r.ut or '') or now()
  redis.call('ZADD', B .. 'due', ended, pid)
  gc_mark(ended + (tonumber(redis.call('HGET', KEYS[1], 'ret') or '') or 0))
end

-- The tree has work for the sweep now that no due process records: an unfinished cascade of
-- terminal transitions (lib_terminal.lua), which the sweep finishes if its caller does not.
local function sweep_soon()
  gc_mark(now())
end

-- Fields `retain` reads from a row.
local RETAIN_FIELDS = { 'status', 'parent', 'et', 'ut', 'merged', 'wd' }

-- A parent's wait found its child `child` (row `c`) terminal: `head` is ready with the child's
-- result (a read handle for the parent, unless data flow withholds it from `clearance`, the
-- parent's), and the child counts as waited for: it may go once its retention period ends.
local function answer_wait(P, child, c, head, clearance)
  head.ready = true
  if c.result ~= '' then
    local o = load_object(c.result)
    if o then
      if #outside(clearance, jdecode(o.labels, {})) > 0 then
        head.withheld = 'data_flow'
      else
        head.result_oid = c.result
        if not redis.call('HGET', hkey(P), c.result) then redis.call('HSET', hkey(P), c.result, 'r') end
      end
    end
  end
  if c.wd ~= '1' then
    redis.call('HSET', pkey(child), 'wd', 1)
    c.wd = '1'
    retain(child, c)
  end
end
