-- needs: attempts
-- A worker claims one attempt: runnable with that attempt -> running, fenced. A: pid, attempt,
-- worker, th (token hash), lease_ms, fence, att_max (attempt history kept on the row).
local pid = A.pid
local r = load(pid)
if not r then fail('not_found', nil, 'no such process ' .. pid) end
if tonumber(r.attempt) ~= A.attempt then
  fail('failed_precondition', 'superseded', pid .. ' is at attempt ' .. r.attempt .. ', not ' .. A.attempt)
end
if r.status == 'running' and r.run == 'live' and r.worker == A.worker and r.th == A.th then
  -- This very claim (its token hash is minted once per launch) was applied and its reply lost,
  -- e.g. the connection dropped before a replica confirmed it: the retry gets the same claim.
  return reply({}, flat_row(pid))
end
if r.status ~= 'runnable' or r.run ~= 'queued' then
  fail('failed_precondition', 'not_runnable', pid .. ' is ' .. r.status .. ', not runnable')
end
-- A child whose parent has ended never starts: the parent's cascade (lib_terminal.lua), still
-- under way, kills it with reason parent_terminated. (A deleted parent had no children left.)
if r.parent ~= '' and TERMINAL[redis.call('HGET', pkey(r.parent), 'status') or 'exited'] then
  fail('failed_precondition', 'not_runnable', pid .. "'s parent " .. r.parent .. ' has ended: ' .. pid ..
    ' is being killed (parent_terminated)')
end
bump(pid, r, { status = 'running', run = 'live', fence = A.fence, worker = A.worker, th = A.th,
  lease = now() + A.lease_ms, uc = 0, att = attempt_claimed(r, A.worker, A.att_max) })
return reply({}, flat_row(pid))
