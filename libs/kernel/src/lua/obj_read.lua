-- needs: objects
-- read_object. A: caller, oid. Needs a read handle; the labels must be inside the clearance;
-- reading taints the caller.
local P = A.caller
local r = caller_row(P, CORE)
local rights = redis.call('HGET', hkey(P), A.oid)
if not rights then fail('permission_denied', 'no_handle', P .. ' holds no handle to ' .. A.oid, { oid = A.oid }) end
if not string.find(rights, 'r', 1, true) then fail('permission_denied', 'rights', P .. ' lacks read on ' .. A.oid) end
local o = load_object(A.oid)
if not o then fail('not_found', 'released', 'object ' .. A.oid .. ' was released; its handle is stale', { oid = A.oid }) end
local labels = jdecode(o.labels, {})
require_flow(jdecode(r.clr, {}), labels, 'object ' .. A.oid)
touch(P, r)
taint(P, r, labels)
return reply({ oid = A.oid, owner = o.owner, rights = rights, labels = labels, version = tonumber(o.version),
  kind = o.kind }, o.payload)
