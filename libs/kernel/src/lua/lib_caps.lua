-- Capability checks and delegation (concatenated after lib.lua when a script needs them).

local function live(g)
  return not given(g.expires_at) or g.expires_at > now()
end

-- A path named with a `.` or `..` segment or a NUL is covered only by a grant naming it exactly:
-- a prefix must not reach `path:/srv/data/../../etc`.
local function plain_path(p)
  if string.find(p, '%z') then return false end
  for seg in string.gmatch(p, '[^/]+') do
    if seg == '.' or seg == '..' then return false end
  end
  return true
end

local function resource_covers(held, wanted)
  if held == wanted then return true end
  local is_path = string.sub(wanted, 1, 5) == 'path:'
  if is_path and not plain_path(wanted) then return false end
  if string.sub(held, -1) == '*' then
    local prefix = string.sub(held, 1, -2)
    return string.sub(wanted, 1, #prefix) == prefix
  end
  -- `path:<dir>` covers the directory and everything below it, not a sibling sharing its prefix
  -- (`path:/srv/data` covers `path:/srv/data/x`, not `path:/srv/database`)
  if is_path and string.sub(held, 1, 6) == 'path:/' and plain_path(held) then
    local dir = string.gsub(string.sub(held, 6), '/+$', '')
    local p = string.sub(wanted, 6)
    return p == dir or string.sub(p, 1, #dir + 1) == dir .. '/'
  end
  return false
end

local function rights_cover(held, wanted)
  local s = {}
  for _, x in ipairs(held) do
    if x == '*' then return true end
    s[x] = true
  end
  for _, x in ipairs(wanted) do
    if not s[x] then return false end
  end
  return true
end

local function holds(caps, resource, right)
  for _, g in ipairs(caps) do
    if live(g) and resource_covers(g.resource, resource) and rights_cover(g.rights, { right }) then return true end
  end
  return false
end

-- The grant a child receives for one requested entry, or a refusal. The matching parent grant
-- must be live and delegable; holding it without delegation authority is not enough.
local function delegate(caps, req)
  local possessed, conflict = false, false
  for _, g in ipairs(caps) do
    if live(g) and resource_covers(g.resource, req.resource) and rights_cover(g.rights, req.rights) then
      if g.delegable then
        local merged, ok = {}, true
        for k, v in pairs(g.constraints or {}) do merged[k] = v end
        for k, v in pairs(req.constraints or {}) do
          if merged[k] ~= nil and cjson.encode(merged[k]) ~= cjson.encode(v) then ok = false end
          merged[k] = v
        end
        if ok then
          local exp = req.expires_at
          if given(g.expires_at) and (not given(exp) or exp > g.expires_at) then exp = g.expires_at end
          if not given(exp) then exp = nil end
          return { resource = req.resource, rights = req.rights, constraints = merged,
            delegable = req.delegable == true, expires_at = exp }
        end
        conflict = true
      else
        possessed = true
      end
    end
  end
  if conflict then
    fail('permission_denied', 'not_held', 'no delegable grant on ' .. req.resource .. ' has compatible constraints',
      { resource = req.resource })
  end
  if possessed then
    fail('permission_denied', 'not_delegable', 'the grant on ' .. req.resource .. ' is held but not delegable',
      { resource = req.resource })
  end
  fail('permission_denied', 'not_held', 'no live grant covers ' .. req.resource .. ' with the requested rights',
    { resource = req.resource })
end
