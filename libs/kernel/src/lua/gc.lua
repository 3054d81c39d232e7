-- needs: budget objects retain
-- Retention: deletes processes of one tree in bounded batches (see lib_retain.lua for when a
-- process may go). KEYS[1] = the tree's counter hash. A: op, limit (processes per call), cost
-- (objects and keys per call), ret (the default retention period, for trees made before they
-- kept their own), and per op:
--   sweep   delete due processes (at most `limit`, `cost`)
--   peek    the due processes as `sweep` would take them, nothing deleted (the archive reads
--           them before `delete`)
--   tree    pid: up to `limit` processes of pid's subtree, children before parents, nothing
--           deleted (an operator's delete, archived first)
--   purge   pid: delete them (an operator's delete)
--   delete  pids: delete these (from `peek` or `tree`) if they still may go; force: an
--           operator's delete (terminal and childless is enough)
-- A deleted process loses its row, objects, handles, mailbox, child set, log keys, its place in
-- its parent's child set (the parent counts it in `dk`) and its due entry; the root's deletion
-- also deletes the tree's counters. Object payloads and mailboxes are UNLINKed (freed off the
-- main thread). A process with more objects than `cost` allows is finished by the next call.
-- Refusals: failed_precondition/not_terminal (tree, purge: pid, or a descendant in this call's
-- batch, is live; nothing deleted by this call); not_found (tree, purge: no such process).
-- Reply head: {deleted: [pid], next: ms|nil (when the next due process may go), v (the due-set
-- version read), gone: bool (the tree is deleted), more: bool (work left within reach now),
-- tq: true (a cascade of terminal transitions is unfinished: the kernel continues it)};
-- peek and tree also return, per process, its flat row and the JSON of its lineage (ancestors,
-- parent first).

local ret = tonumber(redis.call('HGET', KEYS[1], 'ret') or '') or A.ret
local budget = A.cost
local LOG_SUFFIXES = { '' }

-- Free up to `budget` of a process's objects; true once none is left.
local function drop_objects(pid, r)
  local own = ownkey(pid)
  while budget > 0 do
    local oids = redis.call('SPOP', own, math.min(budget, 100))
    if #oids == 0 then return true end
    local bytes = 0
    for _, oid in ipairs(oids) do
      bytes = bytes + held_bytes(okey(oid))
      redis.call('UNLINK', okey(oid))
      if r.parent ~= '' then redis.call('HDEL', hkey(r.parent), oid) end
    end
    budget = budget - #oids
    uncharge(pid, bytes)
  end
  return redis.call('EXISTS', own) == 0
end

-- Delete one process (terminal, childless). False when its objects need another call.
local function drop(pid, r)
  if not drop_objects(pid, r) then return false end
  local mailbox = release_mailbox(pid)
  local keys = { pkey(pid), hkey(pid), ownkey(pid), kkey(pid), B .. 'logm:' .. pid }
  -- child logs (log_append.lua): the stream <base>log:<pid>:<attempt> per attempt, logm:<pid>
  for a = 0, tonumber(r.attempt or '0') or 0 do
    for _, suffix in ipairs(LOG_SUFFIXES) do keys[#keys + 1] = B .. 'log:' .. pid .. ':' .. a .. suffix end
  end
  -- the cost is the keys that were there: most of the names (mailbox parts, logs) never existed
  budget = budget - math.max(1, mailbox + redis.call('UNLINK', unpack(keys)))
  count_status(r.status, -1)
  redis.call('ZREM', B .. 'due', pid)
  if r.parent ~= '' then
    redis.call('ZREM', kkey(r.parent), pid)
    redis.call('HINCRBY', pkey(r.parent), 'dk', 1)
    local pr = load(r.parent, RETAIN_FIELDS)
    if pr then retain(r.parent, pr) end
  end
  return true
end

local DROP_FIELDS = { 'status', 'parent', 'et', 'ut', 'merged', 'wd', 'attempt' }

-- The due processes that may go now (ineligible ones leave the due set: whatever makes them
-- eligible adds them again).
local function due_now()
  local pids = redis.call('ZRANGEBYSCORE', B .. 'due', '-inf', now() - ret, 'LIMIT', 0, A.limit)
  local out = {}
  for _, pid in ipairs(pids) do
    local r = load(pid, DROP_FIELDS)
    if r and retain_eligible(pid, r) then
      out[#out + 1] = pid
    else
      redis.call('ZREM', B .. 'due', pid)
    end
  end
  return out
end

-- Up to `limit` processes of pid's subtree, children before their parent (post-order).
local function subtree(pid)
  local out, stack = {}, { { pid, 0 } }
  while #stack > 0 and #out < A.limit do
    local top = stack[#stack]
    local kid = redis.call('ZRANGE', kkey(top[1]), top[2], top[2])[1]
    if kid then
      top[2] = top[2] + 1
      stack[#stack + 1] = { kid, 0 }
    else
      out[#out + 1] = top[1]
      stack[#stack] = nil
    end
  end
  return out
end

local function require_terminal(pids)
  for _, pid in ipairs(pids) do
    local status = redis.call('HGET', pkey(pid), 'status')
    if not status then absent(pid) end
    if not TERMINAL[status] then
      fail('failed_precondition', 'not_terminal', pid .. ' is ' .. status .. ', not terminal: only a terminal tree can be deleted',
        { pid = pid, status = status })
    end
  end
end

local function lineage(r)
  local chain, p = {}, r.parent
  while p and p ~= '' do
    chain[#chain + 1] = p
    p = redis.call('HGET', pkey(p), 'parent')
  end
  return jlist(chain)
end

local function summaries(head, pids)
  local out = {}
  for _, pid in ipairs(pids) do
    local flat = flat_row(pid)
    if #flat > 0 then
      out[#out + 1] = flat
      out[#out + 1] = lineage(load(pid, { 'status', 'parent' }))
    end
  end
  head.pids = pids
  return reply(head, unpack(out))
end

local deleted, more = {}, false
local function delete_all(pids, force)
  for _, pid in ipairs(pids) do
    if budget <= 0 then more = true; break end
    local r = load(pid, DROP_FIELDS)
    if r and TERMINAL[r.status] and (force and redis.call('EXISTS', kkey(pid)) == 0 or retain_eligible(pid, r)) then
      if drop(pid, r) then deleted[#deleted + 1] = pid else more = true; break end
    end
  end
end

local head = {}
if A.op == 'peek' then
  return summaries(head, due_now())
elseif A.op == 'tree' or A.op == 'purge' then
  -- the target first: a large subtree's first batch does not reach it (children come first)
  require_terminal({ A.pid })
  local pids = subtree(A.pid)
  require_terminal(pids)
  if A.op == 'tree' then return summaries(head, pids) end
  delete_all(pids, true)
  if redis.call('EXISTS', pkey(A.pid)) == 1 then more = true end
elseif A.op == 'sweep' then
  local pids = due_now()
  delete_all(pids, false)
  if #pids == A.limit then more = true end
elseif A.op == 'delete' then
  delete_all(A.pids, A.force)
else
  fail('invalid_argument', nil, 'unknown gc op ' .. tostring(A.op))
end

head.deleted = deleted
head.more = more
head.v = tonumber(redis.call('HGET', KEYS[1], 'gcv') or '0')
-- the tree is gone with its root: its counters go too (nothing else of it is left)
if redis.call('EXISTS', pkey(ROOT)) == 0 then
  redis.call('UNLINK', KEYS[1], B .. 'due', B .. 'tq')
  head.gone = true
else
  local first = redis.call('ZRANGE', B .. 'due', 0, 0, 'WITHSCORES')
  if first[2] then head.next = tonumber(first[2]) + ret end
  -- an unfinished cascade of terminal transitions (lib_terminal.lua): the reply's `tq` has the
  -- kernel finish it, and the tree stays due until a sweep finds none
  if redis.call('EXISTS', B .. 'tq') == 1 then
    TQ = true
    head.next = math.min(head.next or now(), now())
  end
end
return reply(head)
