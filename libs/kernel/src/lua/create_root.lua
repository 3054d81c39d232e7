-- needs: objects rows
-- A new tree: its counters, the root row, the goal object. A: pid, goal, input? (JSON), image,
-- ispec, idef, pool, cwd, caps, clearance, budget (dim -> limit, -1 unlimited), launch, th,
-- retention_ms.
if redis.call('EXISTS', KEYS[1]) == 1 then fail('failed_precondition', nil, 'pid taken: ' .. A.pid) end
-- ret: the tree's retention period (ms), which every process of it keeps after its end; ep its
-- epoch and sv the server numbering it (see next_number)
redis.call('HSET', KEYS[1], 'p', 0, 'o', 0, 'm', 0, 'ret', A.retention_ms, 'ep', now(), 'sv', server_id())
local pid = A.pid
local goal_oid, goal_key = new_oid()
put_object(goal_oid, goal_key, 'GOAL', pid, cjson.encode(A.goal), {})
redis.call('HSET', hkey(pid), goal_oid, 'r')
local f = {
  goal = A.goal, image = A.image, ispec = A.ispec, idef = cjson.encode(A.idef), iskills = jlist(A.skills), pool = A.pool, skills = jlist(A.skills),
  cwd = A.cwd,
  caps = jlist(A.caps), clr = jlist(A.clearance), roots = jlist({ goal_oid }), mode = 'root', th = A.th,
}
if given(A.input) then f.input = A.input end
if given(A.schema) then f.schema = A.schema end
if A.launch then
  f.status = 'runnable'; f.attempt = 1; f.run = 'queued'; f.driver = 'worker'
else
  f.status = 'running'; f.attempt = 0; f.run = 'none'; f.driver = 'caller'
end
for _, d in ipairs(DIMS) do
  f['bl:' .. d] = A.budget[d]; f['br:' .. d] = 0; f['bu:' .. d] = 0
end
new_row(pid, f)
return reply({ pid = pid }, flat_row(pid))
