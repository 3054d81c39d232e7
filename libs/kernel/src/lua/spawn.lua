-- needs: caps budget objects rows
-- spawn_child_process and fork_child_process. A: caller, mode (spawn|worker|restricted|copy|
-- speculative), goal, input? (JSON), image?, ispec?, idef?, iskills? and pool? (the image's
-- spec, default budget, skills and pool, given with image), cwd?, paths, caps, budget, clearance?, root_oids?, include_parent_roots,
-- object_bytes (the child's object_bytes limit when neither the spawn nor the image gives one).
-- Refusals, all before the first write (besides caller_row's): permission_denied with reason
-- missing_capability (no process:spawn use; no read on another image), path (a working_directory
-- or inherited path outside the parent's cwd that no live path: grant of the parent covers with
-- the right it needs), restricted, not_held / not_delegable (delegation), no_handle / rights (fork
-- roots), data_flow; invalid_argument with no_image, path (a NUL in a path); not_found released;
-- resource_exhausted budget.
local P = A.caller
local PARENT_FIELDS = { 'status', 'parent', 'gen', 'lease', 'ws', 'caps', 'image', 'ispec', 'idef', 'iskills',
  'pool', 'cwd', 'clr', 'taint', 'skills', 'roots' }
for _, d in ipairs(DIMS) do
  PARENT_FIELDS[#PARENT_FIELDS + 1] = 'bl:' .. d
  PARENT_FIELDS[#PARENT_FIELDS + 1] = 'br:' .. d
  PARENT_FIELDS[#PARENT_FIELDS + 1] = 'bu:' .. d
end
local pr = caller_row(P, PARENT_FIELDS)
local pcaps = jdecode(pr.caps, {})
if not holds(pcaps, 'process:spawn', 'use') then
  fail('permission_denied', 'missing_capability', P .. ' holds no process:spawn authority')
end

-- image: default the parent's (its snapshot); another one needs read authority on it
local image, ispec, idef, iskills, pool = pr.image, pr.ispec, jdecode(pr.idef, {}), jdecode(pr.iskills, {}), pr.pool
if given(A.image) then
  if A.image ~= pr.image and not holds(pcaps, 'image:' .. A.image, 'read') then
    fail('permission_denied', 'missing_capability', P .. ' has no read authority on image ' .. A.image)
  end
  image, ispec, idef, iskills, pool = A.image, A.ispec, A.idef, A.iskills, A.pool
end
if image == '' then fail('invalid_argument', 'no_image', 'no image given and the parent has none') end

-- paths: absolute, or relative to the parent's cwd; normalised (`..` above `/` stays at `/`).
-- Each must resolve inside the parent's cwd, or inside a live path: grant of the parent with the
-- right its access needs (an inherited path its access, a working_directory write: the worker
-- mounts a process's cwd read-write).
local function normpath(base, p)
  if string.find(p, '%z') then return nil end
  local parts = {}
  if string.sub(p, 1, 1) ~= '/' then
    for seg in string.gmatch(base, '[^/]+') do parts[#parts + 1] = seg end
  end
  for seg in string.gmatch(p, '[^/]+') do
    if seg == '..' then
      parts[#parts] = nil
    elseif seg ~= '.' then
      parts[#parts + 1] = seg
    end
  end
  return '/' .. table.concat(parts, '/')
end
local function inside(dir, p)
  return dir == '/' or p == dir or string.sub(p, 1, #dir + 1) == dir .. '/'
end
local pcwd = normpath('/', pr.cwd)
local function confined(what, given_path, right)
  local abs = normpath(pcwd, given_path)
  if not abs then fail('invalid_argument', 'path', what .. ' contains a NUL byte') end
  if not inside(pcwd, abs) and not holds(pcaps, 'path:' .. abs, right) then
    local shown = abs
    if given_path ~= abs then shown = abs .. ' (given as ' .. given_path .. ')' end
    fail('permission_denied', 'path', what .. ' ' .. shown .. " is outside the parent's cwd " .. pcwd ..
      ' and no live path: grant with ' .. right .. ' covers it', { path = abs, cwd = pcwd, right = right })
  end
  return abs
end
local cwd = pr.cwd
if given(A.cwd) then cwd = confined('working_directory', A.cwd, 'write') end
local paths = {}
for _, ip in ipairs(A.paths) do
  paths[#paths + 1] = { path = confined('inherited path', ip.path, ip.access), kind = ip.kind, access = ip.access }
end

-- capabilities: declared image needs grant nothing; only explicit delegation does
if A.mode == 'restricted' and #A.caps > 0 then
  fail('permission_denied', 'restricted', 'a restricted fork inherits no capabilities')
end
local grants = {}
for _, req in ipairs(A.caps) do grants[#grants + 1] = delegate(pcaps, req) end

-- clearance: the parent's unless given. A clearance bounds what a process may hold and gives no
-- access, so it may differ from the parent's; deliveries back to the parent are checked against
-- the parent's own clearance. The goal carries the parent's labels, so it must fit.
local clr = jdecode(pr.clr, {})
if given(A.clearance) then clr = A.clearance end
local ptaint = jdecode(pr.taint, {})
require_flow(clr, ptaint, 'the goal')

-- roots (fork): omitted -> all parent roots when include_parent_roots; given (even []) -> exactly those
local inherited = {}
local eph = {}
if A.mode ~= 'spawn' then
  local selected
  if given(A.root_oids) then
    selected = A.root_oids
  elseif A.include_parent_roots then
    selected = jdecode(pr.roots, {})
  else
    selected = {}
  end
  local seen = {}
  for _, oid in ipairs(selected) do
    if not seen[oid] then
      seen[oid] = true
      local held = redis.call('HGET', hkey(P), oid)
      if not held then fail('permission_denied', 'no_handle', P .. ' holds no handle to ' .. oid, { oid = oid }) end
      local o = load_object(oid)
      if not o then fail('not_found', 'released', 'object ' .. oid .. ' was released', { oid = oid }) end
      require_flow(clr, jdecode(o.labels, {}), 'object ' .. oid)
      local rights = 'r'
      if A.mode == 'copy' then rights = held end
      if string.find(held, 'r', 1, true) == nil then
        fail('permission_denied', 'rights', P .. ' lacks read on ' .. oid, { oid = oid })
      end
      inherited[#inherited + 1] = { oid, rights }
      if A.mode == 'speculative' then eph[#eph + 1] = oid end
    end
  end
end

-- budget: explicit dimensions must fit the parent's remaining; omitted ones are attenuated
local limits = {}
local prem = remaining(pr, 'children')
if prem and prem < 1 then
  fail('resource_exhausted', 'budget', P .. ' has no children budget left', { dimension = 'children', remaining = prem })
end
for _, d in ipairs(DIMS) do
  local rem = remaining(pr, d)
  if d == 'children' and rem then rem = rem - 1 end
  local want = A.budget[d]
  if d == 'children' and A.mode == 'restricted' then want = 0 end
  if want ~= nil then
    if rem and want > rem then
      fail('resource_exhausted', 'budget', 'the requested ' .. d .. ' budget exceeds what ' .. P .. ' has left',
        { dimension = d, requested = want, remaining = rem })
    end
    limits[d] = want
  else
    local dflt = idef[d]
    if d == 'object_bytes' then
      -- Halving per omitted spawn would starve fan-outs, and so would a fixed default (16 children
      -- of 64 MiB take a 1 GiB tree): the image's default, else the kernel's, at most a 256th of
      -- what is left, so the thousandth child of a fan-out still gets some (80 KiB of 1 GiB).
      limits[d] = dflt or A.object_bytes
      if rem then
        local share = dflt and math.max(0, rem) or math.floor(math.max(0, rem) / 256)
        if limits[d] > share then limits[d] = share end
      end
    elseif rem and d == 'children' then
      -- a leaf unless told otherwise: reserving half for every omitted spawn would starve fan-outs
      limits[d] = math.min(dflt or 0, math.max(0, rem))
    elseif rem then
      local half = math.floor(math.max(0, rem) / 2)
      if dflt ~= nil and dflt < half then half = dflt end
      limits[d] = half
    elseif dflt ~= nil then
      limits[d] = dflt
    else
      limits[d] = -1
    end
  end
end

-- skills: spawns start from the image's defaults; same-image forks keep the parent's
-- snapshot; cross-image forks keep only the skills the new image also lists
local skills
if A.mode == 'spawn' then
  skills = iskills
elseif image == pr.image then
  skills = jdecode(pr.skills, {})
else
  local allowed = label_set(iskills)
  skills = {}
  for _, s in ipairs(jdecode(pr.skills, {})) do if allowed[s] then skills[#skills + 1] = s end end
end

-- ------------------------------------------------------------ writes
touch(P, pr)
-- never a number this tree handed out before, even one a failover lost (see next_number)
local n, ntext = next_number('p')
local pid = ROOT .. '.' .. ntext
local goal_oid, goal_key = new_oid()
put_object(goal_oid, goal_key, 'GOAL', pid, cjson.encode(A.goal), ptaint)
local handles = { goal_oid, 'r' }
local roots = { goal_oid }
local out_roots = { { oid = goal_oid, rights = 'r' } }
for _, e in ipairs(inherited) do
  handles[#handles + 1] = e[1]
  handles[#handles + 1] = e[2]
  roots[#roots + 1] = e[1]
  out_roots[#out_roots + 1] = { oid = e[1], rights = e[2] }
end
redis.call('HSET', hkey(pid), unpack(handles))
local f = {
  parent = P, goal = A.goal, image = image, ispec = ispec, idef = cjson.encode(idef), iskills = jlist(iskills),
  pool = pool, cwd = cwd, paths = jlist(paths),
  status = 'runnable', attempt = 1, run = 'queued', driver = 'worker', skills = jlist(skills),
  clr = jlist(clr), taint = jlist(ptaint), caps = jlist(grants), roots = jlist(roots), eph = jlist(eph),
  mode = A.mode, n = n,
}
if given(A.input) then f.input = A.input end
if given(A.schema) then f.schema = A.schema end
local reserve = {}
for _, d in ipairs(DIMS) do
  f['bl:' .. d] = limits[d]; f['br:' .. d] = 0; f['bu:' .. d] = 0
  if limits[d] >= 0 and remaining(pr, d) then reserve['br:' .. d] = bnum(pr, 'br:' .. d) + limits[d] end
end
local written = new_row(pid, f)
redis.call('ZADD', kkey(P), n, pid)
hset(P, pr, reserve)
charge(P, pr, { children = 1 })
-- the new row as written (what the launch result needs), without reading it back
return reply({ pid = pid, roots = out_roots }, written)
