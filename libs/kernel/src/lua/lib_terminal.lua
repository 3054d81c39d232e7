-- ---------------------------------------------------------------- terminal transitions

local terminalize

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
  for _, c in ipairs(redis.call('ZRANGE', kkey(pid), 0, -1)) do
    local cr = load(c)
    if TERMINAL[cr.status] then
      if cr.merged ~= '1' and cr.released ~= '1' then release_memory(c, cr) end
      retain(c, cr)
    else
      kill(c, cr, 'terminate', 'parent_terminated')
    end
  end
  retain(pid, r)
end
