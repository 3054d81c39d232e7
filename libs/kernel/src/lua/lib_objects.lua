-- ---------------------------------------------------------------- objects

local function new_oid()
  local _, n = next_number('o')
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
  local bytes = 0
  for _, oid in ipairs(owned) do
    bytes = bytes + held_bytes(okey(oid))
    redis.call('UNLINK', okey(oid))
  end
  uncharge(pid, bytes)
  redis.call('DEL', ownkey(pid), hkey(pid))
  hset(pid, r, { released = 1 })
end

-- Deletes pid's mailbox and takes its bytes off the tree's (KEYS[1]'s `mb`, see send.lua).
local function release_mailbox(pid)
  untree_mail(tonumber(redis.call('HGET', B .. 'mm:' .. pid, 'b') or '0') or 0)
  return redis.call('UNLINK', B .. 'mm:' .. pid, B .. 'mu:' .. pid, B .. 'ma:' .. pid, B .. 'mi:' .. pid, B .. 'mn:' .. pid)
end

-- A root's memory has no parent to merge it: at its terminal transition everything it owns but
-- its result (which the operator reads) is released, with its mailbox (nobody can read it any
-- more). The result and the row go with the tree when its retention period ends.
local function release_root(pid, result_oid)
  local bytes = 0
  for _, oid in ipairs(redis.call('SMEMBERS', ownkey(pid))) do
    if oid ~= result_oid then
      bytes = bytes + held_bytes(okey(oid))
      redis.call('UNLINK', okey(oid))
      redis.call('SREM', ownkey(pid), oid)
      redis.call('HDEL', hkey(pid), oid)
    end
  end
  uncharge(pid, bytes)
  release_mailbox(pid)
end
