-- needs: objects retain batch
-- wait_children: observe a set of direct children, or register the caller's wait on them in one
-- step. A: caller, children (distinct pids), mode ('any': ready once one of them is terminal;
-- 'all': once every one is), block, recheck. Each terminal child grants the caller a read handle
-- to its result (subject to data flow) and counts as waited for, as wait.lua does for one. The
-- durable wait_state is {type = 'children', child_pids, mode, since}; lib_terminal's terminalize
-- resumes the caller when it is met.
local P = A.caller
local pr = caller_row(P, CORE, A.recheck)
local clr = nil
local heads, ended = {}, {}
local cs = {}
for i, child in ipairs(A.children) do
  cs[i] = at_entry(i - 1, child_of, P, child, { 'status', 'parent', 'result', 'et', 'ut', 'merged', 'wd' })
end
for i, child in ipairs(A.children) do
  local c = cs[i]
  local head = { ready = false }
  if TERMINAL[c.status] then
    clr = clr or jdecode(pr.clr, {})
    answer_wait(P, child, c, head, clr)
    ended[#ended + 1] = child
  end
  heads[i] = head
end
local ready = #ended > 0
if A.mode == 'all' then ready = #ended == #A.children end
if ready then
  touch(P, pr)
elseif A.block and pr.status ~= 'paused' then
  local ws = jdecode(pr.ws, nil)
  local same = pr.status == 'waiting_event' and ws and ws.type == 'children' and ws.mode == A.mode and
    #ws.child_pids == #A.children
  if same then
    for i, child in ipairs(A.children) do
      if ws.child_pids[i] ~= child then same = false; break end
    end
  end
  if not same then
    bump(P, pr, { status = 'waiting_event',
      ws = cjson.encode({ type = 'children', child_pids = A.children, mode = A.mode, since = now() }) })
  end
else
  touch(P, pr)
end
local rows = {}
for i, child in ipairs(A.children) do rows[i] = fields_row(child, { 'pid', 'status', 'ws', 'outcome', 'gen' }) end
return reply({ ready = ready, ended = ended, heads = heads }, unpack(rows))
