-- needs: objects
-- create_object. A: caller, payload (JSON), labels?, root. The object carries the caller's labels.
local P = A.caller
local r = caller_row(P, { 'status', 'parent', 'gen', 'lease', 'ws', 'clr', 'taint', 'roots' })
local labels = jdecode(r.taint, {})
if given(A.labels) then
  require_flow(jdecode(r.clr, {}), A.labels, 'the object')
  labels = union(labels, A.labels)
end
touch(P, r)
local oid, key = new_oid()
put_object(oid, key, 'PROCESS', P, A.payload, labels)
redis.call('HSET', hkey(P), oid, 'rw')
if A.root then
  local roots = jdecode(r.roots, {})
  roots[#roots + 1] = oid
  hset(P, r, { roots = jlist(roots) })
end
return reply({ oid = oid, version = 1, labels = labels })
