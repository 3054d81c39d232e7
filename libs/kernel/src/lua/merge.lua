-- needs: objects retain
-- merge_child_memory: once, for a direct terminal child. A: caller, child, include_child_created.
-- Candidates are the child's own roots (and, with include_child_created, its other PROCESS
-- objects); they change owner to the caller and keep their OIDs. Every other object the child
-- owns (PROCESS_RESULT included) is released and the caller's handles to it are revoked.
local P = A.caller
local pr = caller_row(P)
local c = child_of(P, A.child)
local C = A.child
if not TERMINAL[c.status] then fail('failed_precondition', 'not_terminal', C .. ' is ' .. c.status .. ', not terminal') end
if c.merged == '1' then fail('failed_precondition', 'already_merged', C .. ' was already merged') end
if c.released == '1' then fail('failed_precondition', 'released', C .. ' memory was already released') end

local owned = redis.call('SMEMBERS', ownkey(C))
local owned_set = label_set(owned)
local eph_set = label_set(jdecode(c.eph, {}))
local merged, skipped, seen = {}, {}, {}
local objects = {}

local function consider(oid, from_roots)
  if seen[oid] then return end
  seen[oid] = true
  if eph_set[oid] then skipped[#skipped + 1] = { oid = oid, reason = 'ephemeral' }; return end
  if not owned_set[oid] then
    if from_roots then skipped[#skipped + 1] = { oid = oid, reason = 'not_child_owned' } end
    return
  end
  local o = load_object(oid)
  if not o then skipped[#skipped + 1] = { oid = oid, reason = 'released' }; return end
  if o.kind == 'GOAL' then skipped[#skipped + 1] = { oid = oid, reason = 'goal' }; return end
  if o.kind ~= 'PROCESS' then return end
  merged[#merged + 1] = oid
  objects[oid] = o
end

for _, oid in ipairs(jdecode(c.roots, {})) do consider(oid, true) end
if A.include_child_created then
  local rest = {}
  for _, oid in ipairs(owned) do rest[#rest + 1] = oid end
  table.sort(rest, function(a, b)
    return tonumber(string.match(a, '/o(%d+)$')) < tonumber(string.match(b, '/o(%d+)$'))
  end)
  for _, oid in ipairs(rest) do consider(oid, false) end
end

-- data flow: any candidate outside the caller's clearance refuses the whole merge
local clr = jdecode(pr.clr, {})
local denied = {}
for _, oid in ipairs(merged) do
  if #outside(clr, jdecode(objects[oid].labels, {})) > 0 then denied[#denied + 1] = oid end
end
if #denied > 0 then
  fail('permission_denied', 'data_flow', 'merge would move labelled objects outside the clearance of ' .. P,
    { oids = denied })
end

-- ------------------------------------------------------------ writes
touch(P, pr)
local merged_set = label_set(merged)
local moved, freed = 0, 0
for _, oid in ipairs(merged) do
  moved = moved + held_bytes(okey(oid))
  redis.call('HSET', okey(oid), 'owner', P, 'ut', now())
  redis.call('SADD', ownkey(P), oid)
  redis.call('HSET', hkey(P), oid, 'rw')
end
for _, oid in ipairs(owned) do
  if not merged_set[oid] then
    freed = freed + held_bytes(okey(oid))
    redis.call('DEL', okey(oid))
    redis.call('HDEL', hkey(P), oid)
  end
end
redis.call('DEL', ownkey(C), hkey(C))
-- object bytes: the merged ones stay held (by the caller now, which counted them as its
-- descendant's); the released ones are given back up the chain
local cb = bnum(c, 'bu:object_bytes') - moved
if cb < 0 then cb = 0 end
redis.call('HSET', pkey(C), 'bu:object_bytes', cb)
c['bu:object_bytes'] = tostring(cb)
uncharge(C, freed)
bump(C, c, { merged = 1 })
retain(C, c)
return reply({ merged_oids = merged, skipped_oids = skipped })
