-- needs: budget objects terminal
-- signal_child_process (caller = the parent) and the admin signal (caller = '').
-- A: caller, child, signal, reason?. Pause and resume never clear a wait or a host-only gate.
local c
if A.caller ~= '' then
  caller_row(A.caller)
  c = child_of(A.caller, A.child)
else
  c = load(A.child)
  if not c then fail('not_found', nil, 'no such process ' .. A.child) end
end
local pid = A.child
if TERMINAL[c.status] then fail('failed_precondition', 'terminal', pid .. ' is already ' .. c.status) end
local reason = A.reason
local head = { child_pid = pid }

if A.signal == 'pause' then
  if c.status == 'paused' then fail('failed_precondition', 'already_paused', pid .. ' is already paused') end
  if c.psig ~= '' then fail('failed_precondition', 'kill_pending', pid .. ' is being stopped') end
  bump(pid, c, { status = 'paused', pfrom = c.status, preason = reason or 'signal' })
  if c.run == 'live' then publish_control(pid, c, 'pause', reason) end
elseif A.signal == 'resume' then
  if c.status ~= 'paused' then fail('failed_precondition', 'not_paused', pid .. ' is ' .. c.status .. ', not paused') end
  if c.gate == 'host' and A.caller ~= '' then
    fail('failed_precondition', 'host_gate', pid .. ' was paused by the host (' .. c.preason .. '); only an operator may resume it')
  end
  if c.run == 'queued' or c.run == 'stale' then
    -- held before it ran, or recovered stale: a new attempt (a new job id)
    local attempt = tonumber(c.attempt) + 1
    bump(pid, c, { status = 'runnable', attempt = attempt, run = 'queued', pfrom = '', preason = '', gate = '',
      fence = '', worker = '', ws = '' })
    head.launch = { pid = pid, attempt = attempt }
  else
    local back = 'running'
    if c.ws ~= '' then back = 'waiting_event' end
    bump(pid, c, { status = back, pfrom = '', preason = '', gate = '' })
    if c.run == 'live' then publish_control(pid, c, 'resume', reason) end
  end
else
  kill(pid, c, A.signal, reason or A.signal)
end
return reply(head, flat_row(pid))
