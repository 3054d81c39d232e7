-- needs: objects retain
-- wait_child_process: observe a direct child, or register the caller's wait in one step.
-- A: caller, child, block, recheck. A terminal child grants the caller a read handle to its result,
-- subject to data flow.
local P = A.caller
local pr = caller_row(P, CORE, A.recheck)
local c = child_of(P, A.child, { 'status', 'parent', 'result', 'et', 'ut', 'merged', 'wd' })
local head = { child_pid = A.child, ready = false }
if TERMINAL[c.status] then
  answer_wait(P, A.child, c, head, jdecode(pr.clr, {}))
  touch(P, pr)
elseif A.block and pr.status ~= 'paused' then
  local ws = jdecode(pr.ws, nil)
  if not (pr.status == 'waiting_event' and ws and ws.type == 'child' and ws.child_pid == A.child) then
    bump(P, pr, { status = 'waiting_event',
      ws = cjson.encode({ type = 'child', child_pid = A.child, since = now() }) })
  end
else
  touch(P, pr)
end
-- What a wait answers about the child (see waitResult).
return reply(head, fields_row(A.child, { 'pid', 'status', 'ws', 'outcome', 'gen' }))
