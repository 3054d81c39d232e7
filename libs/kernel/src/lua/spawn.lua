-- needs: caps budget objects rows spawn
-- spawn_child_process and fork_child_process. A: caller, mode (spawn|worker|restricted|copy|
-- speculative), goal, input? (JSON), image?, ispec?, idef?, iskills? and pool? (the image's
-- spec, default budget, skills and pool, given with image), cwd?, paths, caps, budget, clearance?, root_oids?, include_parent_roots,
-- object_bytes (the child's object_bytes limit when neither the spawn nor the image gives one).
-- Refusals, all before the first write (besides caller_row's): permission_denied with reason
-- missing_capability (no process:spawn use; no read on another image), path (a working_directory
-- or inherited path outside the parent's cwd that no live path: grant of the parent covers with
-- the right it needs), restricted, not_held / not_delegable (delegation), no_handle / rights (fork
-- roots), data_flow; invalid_argument with no_image, path (a NUL in a path); not_found released;
-- resource_exhausted budget. The checks and writes are lib_spawn.lua's (spawn_many.lua shares them).
local P = A.caller
local pr, pcaps = spawn_parent(P)
local plan = spawn_plan(P, pr, pcaps, A)

-- ------------------------------------------------------------ writes
touch(P, pr)
local pid, out_roots, written = spawn_write(P, plan)
spawn_commit(P, pr, { plan })
-- the new row as written (what the launch result needs), without reading it back
return reply({ pid = pid, roots = out_roots }, written)
