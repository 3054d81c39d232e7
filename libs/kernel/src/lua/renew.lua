-- needs: (lib only)
-- Lease renewal by the worker that holds the attempt. A: pid, attempt, fence, lease_ms.
-- Answers what the worker must reconcile: paused, a pending cancel/terminate.
local pid = A.pid
local r = load(pid)
if not r then fail('not_found', nil, 'no such process ' .. pid) end
if tonumber(r.attempt) ~= A.attempt or r.fence ~= A.fence then
  fail('failed_precondition', 'superseded', 'attempt ' .. A.attempt .. ' of ' .. pid .. ' was superseded')
end
-- ended through process_exit during this attempt: the worker still owes the completion
if TERMINAL[r.status] and r.uc ~= '1' then return reply({ status = r.status, psig = '', lease = now() }) end
if r.run ~= 'live' then
  fail('failed_precondition', 'superseded', 'attempt ' .. A.attempt .. ' of ' .. pid .. ' no longer holds the lease')
end
local lease = now() + A.lease_ms
hset(pid, r, { lease = lease })
IDX[#IDX + 1] = { pid, tonumber(r.gen), r.status, lease }
return reply({ status = r.status, psig = r.psig, lease = lease })
