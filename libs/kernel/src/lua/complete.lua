-- needs: budget objects terminal attempts
-- A worker completes its attempt. A: pid, attempt, fence, status (exited|failed), outcome,
-- report? (JSON), usage (dim -> amount). A pending cancel/terminate makes it killed; a
-- superseded attempt is refused. After a process_exit in the same attempt only usage is charged.
local pid = A.pid
-- The completion counted by outcome type for metrics, here where the index is the script's own
-- (lib.lua's reply); `ixc` tells the kernel, which counts it with its batch otherwise.
local function counted(status)
  if not A.ix then return nil end
  index_count(A.ix, status == 'killed' and 'killed' or A.outcome.type, 1)
  return true
end
local r = load(pid)
if not r then fail('not_found', nil, 'no such process ' .. pid) end
if tonumber(r.attempt) ~= A.attempt or r.fence ~= A.fence then
  fail('failed_precondition', 'superseded', 'attempt ' .. A.attempt .. ' of ' .. pid .. ' was superseded')
end
if TERMINAL[r.status] then
  if r.uc == '1' then fail('failed_precondition', 'terminal', pid .. ' was already completed') end
  hset(pid, r, { uc = 1 })
  charge(pid, r, A.usage)
  attempt_ended(pid, r, A.outcome.type, A.outcome.reason)
  return reply({ status = r.status, result_oid = r.result, charged_only = true, gen = tonumber(r.gen), ixc = counted(r.status) })
end
if r.run ~= 'live' then
  fail('failed_precondition', 'superseded', 'attempt ' .. A.attempt .. ' of ' .. pid .. ' no longer holds the lease')
end
hset(pid, r, { uc = 1 })
charge(pid, r, A.usage)
local outcome, status, result = A.outcome, A.status, ''
local psig = jdecode(r.psig, nil)
if psig then
  status = 'killed'
  outcome.type = 'killed'
  outcome.reason = psig.reason or psig.signal
elseif status == 'exited' then
  local oid, key = new_oid()
  put_object(oid, key, 'PROCESS_RESULT', pid, A.report or 'null', jdecode(r.taint, {}))
  -- charged, never refused: a completion is never lost (it may pass the limit, as usage may)
  charge(pid, r, { object_bytes = #(A.report or 'null') })
  redis.call('HSET', hkey(pid), oid, 'rw')
  result = oid
end
attempt_ended(pid, r, outcome.type, outcome.reason)
terminalize(pid, r, status, outcome, result)
return reply({ status = status, result_oid = result, gen = tonumber(r.gen), ixc = counted(status) })
