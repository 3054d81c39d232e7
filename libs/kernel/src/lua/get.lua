-- needs: (lib only)
-- get_process (caller = self or parent of pid) and the admin read (caller = ''). A: caller, pid.
if A.caller ~= '' then
  local r = load(A.caller, { 'status', 'th' })
  check_token(A.caller, r)
  if not r then fail('not_found', nil, 'no such process ' .. A.caller) end
  if A.caller ~= A.pid then child_of(A.caller, A.pid, { 'status', 'parent' }) end
end
local row = flat_row(A.pid)
if #row == 0 then absent(A.pid) end
return reply({}, row)
