-- needs: budget objects terminal
-- process_exit: the caller ends itself. A: caller, payload? (JSON), failed, reason?.
-- A payload becomes a PROCESS_RESULT object owned by the caller (not one of its roots).
local P = A.caller
local r = caller_row(P)
local result = ''
if given(A.payload) then
  require_bytes(P, r, #A.payload)
  local oid, key = new_oid()
  put_object(oid, key, 'PROCESS_RESULT', P, A.payload, jdecode(r.taint, {}))
  redis.call('HSET', hkey(P), oid, 'rw')
  charge(P, r, { object_bytes = #A.payload })
  result = oid
end
local status, otype = 'exited', 'completed'
if A.failed then status, otype = 'failed', 'failed' end
terminalize(P, r, status, { type = otype, reason = A.reason, attempt_id = P .. ':' .. r.attempt }, result)
return reply({ status = status, result_oid = result }, flat_row(P))
