-- needs: mail
-- Pending mailbox notices of a process. A: pid, phase: 'peek' (both, nothing consumed),
-- 'before' (interrupts, consumed: due before the next non-message tool call), 'after' (normal
-- ones, consumed: due after a tool call), 'refused' (both in one step, for a refused tool call:
-- normal ones, and interrupts too when A.interrupts, i.e. the call was not a message tool).
local function ids(list)
  local out = {}
  for i, n in ipairs(list) do out[i] = mid(n) end
  return out
end
local mi, mn = mkey('mi', A.pid), mkey('mn', A.pid)
if A.phase == 'peek' then
  return reply({ interrupt = ids(redis.call('ZRANGE', mi, 0, -1)), normal = ids(redis.call('ZRANGE', mn, 0, -1)) })
end
if A.phase == 'refused' then
  local due = { interrupt = {}, normal = ids(redis.call('ZRANGE', mn, 0, -1)) }
  redis.call('DEL', mn)
  if A.interrupts then
    due.interrupt = ids(redis.call('ZRANGE', mi, 0, -1))
    redis.call('DEL', mi)
  end
  return reply(due)
end
local key = mn
if A.phase == 'before' then key = mi end
local list = redis.call('ZRANGE', key, 0, -1)
if #list > 0 then redis.call('DEL', key) end
return reply({ ids = ids(list) })
