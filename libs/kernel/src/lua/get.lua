-- needs: (lib only)
-- get_process (caller = self or parent of pid) and the admin read (caller = ''). A: caller, pid.
if A.caller ~= '' and A.caller ~= A.pid then
  if not load(A.caller, { 'status' }) then fail('not_found', nil, 'no such process ' .. A.caller) end
  child_of(A.caller, A.pid, { 'status', 'parent' })
end
local row = flat_row(A.pid)
if #row == 0 then fail('not_found', nil, 'no such process ' .. A.pid) end
return reply({}, row)
