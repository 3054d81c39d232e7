-- ---------------------------------------------------------------- terminal transitions
-- A terminal transition ends the process's live children too (reason parent_terminated), and
-- theirs. So that a wide or deep tree is not one long script, an ended process with children
-- goes into the tree's cascade queue `B tq` (zset: parent -> spawn number of its last child
-- handled, 0 for none yet), and one script call handles at most A.tb children from it
-- (LIBOS_TERMINATE_BATCH; every child counts: killed, asked to stop, or already ended and
-- released). Work left in the queue is reported (`tq` in the reply) and continued by
-- terminate_more.lua, one batch per call; the tree is marked due in its retention shard now, so
-- the sweep finishes a cascade its caller left unfinished.

local terminalize, cascade
-- Children this script call may still handle (the kernel always passes A.tb).
local CASCADE_LEFT = tonumber(A.tb) or 200
local CASCADING = false

local function publish_control(pid, r, signal, reason)
  redis.call('SPUBLISH', B .. 'ctl', pid .. ' ' .. cjson.encode({ pid = pid, attempt = tonumber(r.attempt), signal = signal, reason = reason }))
end

local function outcome_killed(pid, r, reason)
  return { type = 'killed', reason = reason, attempt_id = pid .. ':' .. r.attempt }
end

-- cancel/terminate: a live execution is asked to stop (its worker completes the attempt as
-- killed); anything else (queued, held, stale, caller-driven) is killed at once.
local function kill(pid, r, signal, reason)
  if r.run == 'live' then
    local cur = jdecode(r.psig, nil)
    if cur and (cur.signal == 'terminate' or cur.signal == signal) then return end
    bump(pid, r, { psig = cjson.encode({ signal = signal, reason = reason }) })
    publish_control(pid, r, signal, reason)
  else
    terminalize(pid, r, 'killed', outcome_killed(pid, r, reason or signal), '')
  end
end

-- Whether the end of `pid` meets its parent's wait_children state `ws`: `pid` is in the set and,
-- for mode 'all', every other child of the set has ended too (read until the first that has not).
local function children_wait_met(ws, pid)
  local member = false
  for _, c in ipairs(ws.child_pids) do
    if c == pid then member = true; break end
  end
  if not member then return false end
  if ws.mode ~= 'all' then return true end
  for _, c in ipairs(ws.child_pids) do
    if c ~= pid and not TERMINAL[redis.call('HGET', pkey(c), 'status') or 'exited'] then return false end
  end
  return true
end

terminalize = function(pid, r, status, outcome, result_oid)
  bump(pid, r, { status = status, outcome = cjson.encode(outcome), result = result_oid or '', ws = '',
    psig = '', th = '', run = 'done', lease = 0, pfrom = '', preason = '', gate = '', et = now() })
  for _, oid in ipairs(jdecode(r.eph, {})) do redis.call('HDEL', hkey(pid), oid) end
  release_budget(r)
  redis.call('SPUBLISH', B .. 'x', pid .. ' ' .. status .. ' ' .. now())
  if r.parent ~= '' then
    local pr = load(r.parent, CORE)
    local ws = jdecode(pr.ws, nil)
    if ws and ((ws.type == 'child' and ws.child_pid == pid) or (ws.type == 'children' and children_wait_met(ws, pid))) then
      if pr.status == 'waiting_event' then
        bump(r.parent, pr, { status = 'running', ws = '' })
      else
        bump(r.parent, pr, { ws = '' })
      end
    end
    -- An exited parent has released its unmerged child memory; a late child follows suit.
    if TERMINAL[pr.status] then release_memory(pid, r) end
  else
    release_root(pid, result_oid or '')
  end
  if redis.call('EXISTS', kkey(pid)) == 1 then
    redis.call('ZADD', B .. 'tq', 0, pid)
    -- a transition made by the cascade only queues: the outermost one runs the cascade
    if not CASCADING then cascade() end
  end
  retain(pid, r)
end

-- A child of an ended parent: a live one is ended (or asked to stop), an ended one releases
-- its unmerged memory and may become due for deletion.
local function orphan(c)
  local cr = load(c)
  if not cr then return end
  if TERMINAL[cr.status] then
    if cr.merged ~= '1' and cr.released ~= '1' then release_memory(c, cr) end
    retain(c, cr)
  else
    kill(c, cr, 'terminate', 'parent_terminated')
  end
end

-- Handle queued children until the queue is empty or this call's share (CASCADE_LEFT) is used.
-- Lowest cursor first: a parent just queued (0) comes before one already under way, so a deep
-- chain is followed down before a wide parent's next batch.
cascade = function()
  local q = B .. 'tq'
  CASCADING = true
  while CASCADE_LEFT > 0 do
    local top = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
    local parent, last = top[1], top[2]
    if not parent then break end
    local want = CASCADE_LEFT
    local kids = redis.call('ZRANGEBYSCORE', kkey(parent), '(' .. last, '+inf', 'WITHSCORES', 'LIMIT', 0, want)
    for i = 1, #kids, 2 do
      orphan(kids[i])
      last = kids[i + 1]
    end
    CASCADE_LEFT = CASCADE_LEFT - #kids / 2
    if #kids / 2 < want then
      redis.call('ZREM', q, parent)
    else
      redis.call('ZADD', q, last, parent)
    end
  end
  CASCADING = false
  TQ = redis.call('EXISTS', q) == 1 or nil
  if TQ then sweep_soon() end
end
