-- needs: caps budget objects rows spawn batch
-- spawn_children: a batch of spawns, all or nothing. A: caller, children (a list of entries with
-- the fields spawn.lua takes, mode 'spawn'), object_bytes. Every entry is checked (lib_spawn's
-- spawn_plan) against the parent as the entries before it leave it (their budget reservations
-- and children count) before the first write; a refusal names its entry (details.index, 0-based)
-- and nothing is created, reserved or charged. Then every child is written in order (pids
-- increasing) and the parent reserves and counts them once.
local P = A.caller
local pr, pcaps = spawn_parent(P)
local view = {}
for k, v in pairs(pr) do view[k] = v end
local plans = {}
for i, E in ipairs(A.children) do
  E.mode = 'spawn'
  if not given(E.object_bytes) then E.object_bytes = A.object_bytes end
  local plan = at_entry(i - 1, spawn_plan, P, view, pcaps, E)
  spawn_reserve_view(view, plan)
  plans[i] = plan
end

-- ------------------------------------------------------------ writes
touch(P, pr)
local pids, rows = {}, {}
for i, plan in ipairs(plans) do
  local pid, _, written = spawn_write(P, plan)
  pids[i] = pid
  rows[i] = written
end
spawn_commit(P, pr, plans)
return reply({ pids = pids }, unpack(rows))
