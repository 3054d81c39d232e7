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
local live = r.run == 'live'
terminalize(P, r, status, { type = otype, reason = A.reason, attempt_id = P .. ':' .. r.attempt }, result)
-- A process that has ended runs nothing: its worker cancels the OS process as the contract does
-- (stdin EOF, the grace, then a kill) and still reports the attempt, which only charges usage.
if live then publish_control(P, r, 'cancel', 'process_exit') end
return reply({ status = status, result_oid = result }, flat_row(P))
