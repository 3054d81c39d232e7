-- needs: objects
-- write_object. A: caller, oid, payload (JSON), if_version?. Needs write rights; the writer's
-- labels flow into the object and must stay inside its owner's clearance.
local P = A.caller
local r = caller_row(P, CORE)
local rights = redis.call('HGET', hkey(P), A.oid)
if not rights then fail('permission_denied', 'no_handle', P .. ' holds no handle to ' .. A.oid, { oid = A.oid }) end
if not string.find(rights, 'w', 1, true) then fail('permission_denied', 'rights', P .. ' lacks write on ' .. A.oid) end
local o = load_object(A.oid)
if not o then fail('not_found', 'released', 'object ' .. A.oid .. ' was released; its handle is stale', { oid = A.oid }) end
local version = tonumber(o.version)
if given(A.if_version) and A.if_version ~= version then
  fail('failed_precondition', 'version_conflict', 'object ' .. A.oid .. ' is at version ' .. version,
    { version = version })
end
local labels = union(jdecode(o.labels, {}), jdecode(r.taint, {}))
-- the owner holds the bytes: a larger payload must fit its object_bytes budget
local delta = #A.payload - #(o.payload or '')
local ob = nil
if delta > 0 then
  ob = load(o.owner, OBJECT_BYTES_FIELDS)
  if ob then require_bytes(o.owner, ob, delta) end
end
if o.owner ~= P then
  local owner = load(o.owner, { 'status', 'clr' })
  if owner then require_flow(jdecode(owner.clr, {}), labels, 'the write') end
end
touch(P, r)
redis.call('HSET', okey(A.oid), 'payload', A.payload, 'version', version + 1, 'labels', jlist(labels), 'ut', now())
if ob then charge(o.owner, ob, { object_bytes = delta }) elseif delta < 0 then uncharge(o.owner, -delta) end
return reply({ oid = A.oid, version = version + 1 })
