-- ---------------------------------------------------------------- objects

local function new_oid()
  local n = redis.call('HINCRBY', KEYS[1], 'o', 1)
  return ROOT .. '/o' .. n, B .. 'o:' .. n
end

local function put_object(oid, key, kind, owner, payload, labels)
  if #labels > 0 then
    redis.call('HSET', key, 'kind', kind, 'owner', owner, 'payload', payload, 'version', 1, 'ct', now(),
      'labels', jlist(labels))
  else
    redis.call('HSET', key, 'kind', kind, 'owner', owner, 'payload', payload, 'version', 1, 'ct', now())
  end
  redis.call('SADD', ownkey(owner), oid)
end

local function load_object(oid)
  local flat = redis.call('HGETALL', okey(oid))
  if #flat == 0 then return nil end
  local o = {}
  for i = 1, #flat, 2 do o[flat[i]] = flat[i + 1] end
  return o
end

-- Release everything a process owns (its unmerged memory) and its handles.
local function release_memory(pid, r)
  local owned = redis.call('SMEMBERS', ownkey(pid))
  for _, oid in ipairs(owned) do redis.call('DEL', okey(oid)) end
  redis.call('DEL', ownkey(pid), hkey(pid))
  hset(pid, r, { released = 1 })
end
