-- needs: objects
-- create_object. A: caller, payload (JSON), labels?, root. The object carries the caller's labels.
-- Its bytes are charged to the caller's object_bytes budget (and its ancestors'): refused with
-- resource_exhausted/budget (dimension object_bytes) before any write when they do not fit.
local P = A.caller
local r = caller_row(P, { 'status', 'parent', 'gen', 'lease', 'ws', 'clr', 'taint', 'roots', 'bl:object_bytes',
  'br:object_bytes', 'bu:object_bytes' })
local labels = jdecode(r.taint, {})
if given(A.labels) then
  require_flow(jdecode(r.clr, {}), A.labels, 'the object')
  labels = union(labels, A.labels)
end
require_bytes(P, r, #A.payload)
touch(P, r)
local oid, key = new_oid()
put_object(oid, key, 'PROCESS', P, A.payload, labels)
charge(P, r, { object_bytes = #A.payload })
redis.call('HSET', hkey(P), oid, 'rw')
if A.root then
  local roots = jdecode(r.roots, {})
  roots[#roots + 1] = oid
  hset(P, r, { roots = jlist(roots) })
end
return reply({ oid = oid, version = 1, labels = labels })
