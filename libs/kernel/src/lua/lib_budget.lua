-- ---------------------------------------------------------------- budgets
-- Per dimension: bl (limit, -1 unlimited), br (reserved for live children), bu (used, own and
-- descendants'). remaining = bl - bu - br.

local function bnum(r, f) return tonumber(r[f] or '0') or 0 end

local function remaining(r, d)
  local l = bnum(r, 'bl:' .. d)
  if l < 0 then return nil end
  return l - bnum(r, 'bu:' .. d) - bnum(r, 'br:' .. d)
end

-- Charge usage to a process and up its chain. At each ancestor the part of the child's
-- reservation that the usage consumed turns from reserved into used.
local function charge(pid, r, usage)
  local before, dec, any = {}, {}, false
  local set = {}
  for d, x in pairs(usage) do
    if x > 0 then
      any = true
      before[d] = bnum(r, 'bu:' .. d)
      dec[d] = 0
      set['bu:' .. d] = before[d] + x
    end
  end
  if not any then return end
  hset(pid, r, set)
  local want = { 'status', 'parent' }
  for d, x in pairs(usage) do
    if x > 0 then
      want[#want + 1] = 'bl:' .. d; want[#want + 1] = 'br:' .. d; want[#want + 1] = 'bu:' .. d
    end
  end
  local kr = r
  while kr.parent ~= '' do
    local p = kr.parent
    local pr = load(p, want)
    local pset, ndec, nbefore = {}, {}, {}
    for d, x in pairs(usage) do
      if x > 0 then
        local conv
        if TERMINAL[kr.status] then
          conv = dec[d]
        else
          local l = bnum(kr, 'bl:' .. d)
          if l < 0 then conv = x else conv = math.min(x, math.max(0, l - before[d])) end
        end
        local prb = bnum(pr, 'br:' .. d)
        if conv > prb then conv = prb end
        pset['br:' .. d] = prb - conv
        ndec[d] = conv
        nbefore[d] = bnum(pr, 'bu:' .. d)
        pset['bu:' .. d] = nbefore[d] + x
      end
    end
    hset(p, pr, pset)
    kr, dec, before = pr, ndec, nbefore
  end
end

-- At terminal the part of the limit neither used nor reserved for live children returns to the
-- parent (and on through terminal ancestors).
local function release_budget(r)
  local amt, any = {}, false
  for _, d in ipairs(DIMS) do
    local rem = remaining(r, d)
    if rem and rem > 0 then amt[d] = rem; any = true end
  end
  local want = { 'status', 'parent' }
  for d, _ in pairs(amt) do want[#want + 1] = 'br:' .. d end
  local p = r.parent
  while any and p ~= '' do
    local pr = load(p, want)
    local set = {}
    for d, u in pairs(amt) do
      local v = bnum(pr, 'br:' .. d) - u
      if v < 0 then v = 0 end
      set['br:' .. d] = v
    end
    hset(p, pr, set)
    if not TERMINAL[pr.status] then break end
    p = pr.parent
  end
end

-- Object bytes held: a payload stored is charged (`charge`) and refused beyond what is left; a
-- payload released or deleted is given back to the process and every ancestor.
local function require_bytes(pid, r, size)
  local rem = remaining(r, 'object_bytes')
  if rem and size > rem then
    fail('resource_exhausted', 'budget', 'an object of ' .. size .. ' bytes exceeds the object_bytes budget ' .. pid ..
      ' has left (' .. math.max(0, rem) .. ' bytes)', { dimension = 'object_bytes', requested = size, remaining = math.max(0, rem) })
  end
end

-- The bytes an object holds against object_bytes (a launch's goal is not charged).
local function held_bytes(key)
  local v = redis.call('HMGET', key, 'kind', 'payload')
  if not v[1] or v[1] == 'GOAL' then return 0 end
  return #v[2]
end

local OBJECT_BYTES_FIELDS = { 'status', 'parent', 'bl:object_bytes', 'br:object_bytes', 'bu:object_bytes' }

local function uncharge(pid, bytes)
  if bytes <= 0 then return end
  local p = pid
  while p and p ~= '' do
    local v = redis.call('HMGET', pkey(p), 'status', 'bu:object_bytes', 'parent')
    if not v[1] then return end
    local left = (tonumber(v[2] or '0') or 0) - bytes
    if left < 0 then left = 0 end
    redis.call('HSET', pkey(p), 'bu:object_bytes', left)
    p = v[3]
  end
end
