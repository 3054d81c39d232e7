-- ---------------------------------------------------------------- spawns
-- What spawn.lua (one child, or a fork) and spawn_many.lua (a batch) share: the parent's row,
-- the checks of one child (`spawn_plan`, no write), and the writes (`spawn_write` per child,
-- then `spawn_commit` once for the parent's reservation and children count).

local SPAWN_PARENT_FIELDS = { 'status', 'parent', 'gen', 'lease', 'ws', 'caps', 'image', 'ispec', 'idef', 'iskills',
  'pool', 'cwd', 'clr', 'taint', 'skills', 'roots' }
for _, d in ipairs(DIMS) do
  SPAWN_PARENT_FIELDS[#SPAWN_PARENT_FIELDS + 1] = 'bl:' .. d
  SPAWN_PARENT_FIELDS[#SPAWN_PARENT_FIELDS + 1] = 'br:' .. d
  SPAWN_PARENT_FIELDS[#SPAWN_PARENT_FIELDS + 1] = 'bu:' .. d
end

-- The caller's row (live, acting) and its capabilities; it must hold process:spawn use.
local function spawn_parent(P)
  local pr = caller_row(P, SPAWN_PARENT_FIELDS)
  local pcaps = jdecode(pr.caps, {})
  if not holds(pcaps, 'process:spawn', 'use') then
    fail('permission_denied', 'missing_capability', P .. ' holds no process:spawn authority')
  end
  return pr, pcaps
end

-- paths: absolute, or relative to the parent's cwd; normalised (`..` above `/` stays at `/`).
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

-- The checks of one child `E` (the fields spawn.lua documents) against the parent row `pr` (its
-- budget fields as they stand before this child: a batch passes a view with its earlier
-- children's reservations added, see spawn_reserve_view). Reads only; returns the plan.
local function spawn_plan(P, pr, pcaps, E)
  -- image: default the parent's (its snapshot); another one needs read authority on it
  local image, ispec, idef, iskills, pool = pr.image, pr.ispec, jdecode(pr.idef, {}), jdecode(pr.iskills, {}), pr.pool
  if given(E.image) then
    if E.image ~= pr.image and not holds(pcaps, 'image:' .. E.image, 'read') then
      fail('permission_denied', 'missing_capability', P .. ' has no read authority on image ' .. E.image)
    end
    image, ispec, idef, iskills, pool = E.image, E.ispec, E.idef, E.iskills, E.pool
  end
  if image == '' then fail('invalid_argument', 'no_image', 'no image given and the parent has none') end

  -- Each path must resolve inside the parent's cwd, or inside a live path: grant of the parent
  -- with the right its access needs (an inherited path its access, a working_directory write:
  -- the worker mounts a process's cwd read-write).
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
  if given(E.cwd) then cwd = confined('working_directory', E.cwd, 'write') end
  local paths = {}
  for _, ip in ipairs(E.paths) do
    paths[#paths + 1] = { path = confined('inherited path', ip.path, ip.access), kind = ip.kind, access = ip.access }
  end

  -- capabilities: declared image needs grant nothing; only explicit delegation does
  if E.mode == 'restricted' and #E.caps > 0 then
    fail('permission_denied', 'restricted', 'a restricted fork inherits no capabilities')
  end
  local grants = {}
  for _, req in ipairs(E.caps) do grants[#grants + 1] = delegate(pcaps, req) end

  -- clearance: the parent's unless given. A clearance bounds what a process may hold and gives no
  -- access, so it may differ from the parent's; deliveries back to the parent are checked against
  -- the parent's own clearance. The goal carries the parent's labels, so it must fit.
  local clr = jdecode(pr.clr, {})
  if given(E.clearance) then clr = E.clearance end
  local ptaint = jdecode(pr.taint, {})
  require_flow(clr, ptaint, 'the goal')

  -- roots (fork): omitted -> all parent roots when include_parent_roots; given (even []) -> exactly those
  local inherited = {}
  local eph = {}
  if E.mode ~= 'spawn' then
    local selected
    if given(E.root_oids) then
      selected = E.root_oids
    elseif E.include_parent_roots then
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
        if E.mode == 'copy' then rights = held end
        if string.find(held, 'r', 1, true) == nil then
          fail('permission_denied', 'rights', P .. ' lacks read on ' .. oid, { oid = oid })
        end
        inherited[#inherited + 1] = { oid, rights }
        if E.mode == 'speculative' then eph[#eph + 1] = oid end
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
    local want = E.budget[d]
    if d == 'children' and E.mode == 'restricted' then want = 0 end
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
        limits[d] = dflt or E.object_bytes
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
  if E.mode == 'spawn' then
    skills = iskills
  elseif image == pr.image then
    skills = jdecode(pr.skills, {})
  else
    local allowed = label_set(iskills)
    skills = {}
    for _, s in ipairs(jdecode(pr.skills, {})) do if allowed[s] then skills[#skills + 1] = s end end
  end

  return { E = E, image = image, ispec = ispec, idef = idef, iskills = iskills, pool = pool, cwd = cwd,
    paths = paths, grants = grants, clr = clr, ptaint = ptaint, inherited = inherited, eph = eph,
    limits = limits, skills = skills }
end

-- A batch checks its next child against the parent as the earlier ones leave it: `view` (a copy
-- of the parent row) gets the reservation and the children count `plan` takes.
local function spawn_reserve_view(view, plan)
  for _, d in ipairs(DIMS) do
    if plan.limits[d] >= 0 and remaining(view, d) then
      view['br:' .. d] = string.format('%d', bnum(view, 'br:' .. d) + plan.limits[d])
    end
  end
  view['bu:children'] = string.format('%d', bnum(view, 'bu:children') + 1)
end

-- The child's pid: the tree's next number (the one place a child's number is taken), never a
-- number this tree handed out before, even one a failover lost (see next_number).
local function spawn_next_pid()
  local n, ntext = next_number('p')
  return n, ROOT .. '.' .. ntext
end

-- Write one planned child of P: its goal object, handles, row and place among P's children.
-- Returns its pid, its roots as the reply names them and the row as written.
local function spawn_write(P, plan)
  local E = plan.E
  local n, pid = spawn_next_pid()
  local goal_oid, goal_key = new_oid()
  put_object(goal_oid, goal_key, 'GOAL', pid, cjson.encode(E.goal), plan.ptaint)
  local handles = { goal_oid, 'r' }
  local roots = { goal_oid }
  local out_roots = { { oid = goal_oid, rights = 'r' } }
  for _, e in ipairs(plan.inherited) do
    handles[#handles + 1] = e[1]
    handles[#handles + 1] = e[2]
    roots[#roots + 1] = e[1]
    out_roots[#out_roots + 1] = { oid = e[1], rights = e[2] }
  end
  redis.call('HSET', hkey(pid), unpack(handles))
  local f = {
    parent = P, goal = E.goal, image = plan.image, ispec = plan.ispec, idef = cjson.encode(plan.idef),
    iskills = jlist(plan.iskills), pool = plan.pool, cwd = plan.cwd, paths = jlist(plan.paths),
    status = 'runnable', attempt = 1, run = 'queued', driver = 'worker', skills = jlist(plan.skills),
    clr = jlist(plan.clr), taint = jlist(plan.ptaint), caps = jlist(plan.grants), roots = jlist(roots),
    eph = jlist(plan.eph), mode = E.mode, n = n,
  }
  if given(E.input) then f.input = E.input end
  if given(E.schema) then f.schema = E.schema end
  for _, d in ipairs(DIMS) do
    f['bl:' .. d] = plan.limits[d]; f['br:' .. d] = 0; f['bu:' .. d] = 0
  end
  local written = new_row(pid, f)
  redis.call('ZADD', kkey(P), n, pid)
  return pid, out_roots, written
end

-- After the writes of `plans`: P reserves their budgets and counts them as children used.
local function spawn_commit(P, pr, plans)
  local reserve = {}
  for _, d in ipairs(DIMS) do
    if remaining(pr, d) then
      local sum, any = 0, false
      for _, plan in ipairs(plans) do
        if plan.limits[d] >= 0 then sum = sum + plan.limits[d]; any = true end
      end
      if any then reserve['br:' .. d] = bnum(pr, 'br:' .. d) + sum end
    end
  end
  hset(P, pr, reserve)
  charge(P, pr, { children = #plans })
end
