-- needs: (lib only)
-- log_append: a batch of one attempt's child output, from the worker that runs it, kept within
-- a byte bound (oldest lines dropped first, counted). Changes no process state.
-- Keys: B log:<pid>:<attempt> (stream; fields s = o|e, t = ms, l = text), B logm:<pid> (hash:
-- <attempt>:c the cost kept, <attempt>:d the bytes dropped, <attempt>:e when the log ended).
-- A: pid, attempt, lines ([[s, t, l], ...], oldest first), dropped (bytes the worker dropped
-- before this batch), max (the bound on the cost kept), over (what a line costs beyond its
-- bytes), fin (true: the attempt is over and this is its last batch).
-- A line's bytes are its text's plus its newline; its cost is that plus `over`, so a flood of
-- empty lines is bounded too. A batch over the bound alone keeps only its newest lines.
-- Refusals: not_found (no such process), invalid_argument/no_attempt (not one of its attempts).
-- Reply: head {bytes (the cost kept), dropped}.
-- Publishes: SPUBLISH B lg `<pid> <attempt>` (followers of the log re-read).
local pid, attempt = A.pid, A.attempt
local latest = redis.call('HGET', pkey(pid), 'attempt')
if not latest then fail('not_found', nil, 'no such process ' .. pid) end
if attempt < 1 or attempt > tonumber(latest) then
  fail('invalid_argument', 'no_attempt', pid .. ' has no attempt ' .. attempt)
end
local skey = B .. 'log:' .. pid .. ':' .. attempt
local mkey = B .. 'logm:' .. pid
local m = redis.call('HMGET', mkey, attempt .. ':c', attempt .. ':d')
local cost = tonumber(m[1] or '0')
local dropped = tonumber(m[2] or '0') + A.dropped
local lines = A.lines

-- The newest lines of the batch that fit the bound.
local first, batch = 1, 0
for i = #lines, 1, -1 do
  local c = #lines[i][3] + 1 + A.over
  if batch + c > A.max then
    first = i + 1
    break
  end
  batch = batch + c
end
for i = 1, first - 1 do dropped = dropped + #lines[i][3] + 1 end

-- Then the oldest lines kept, until the batch fits beside them.
local excess = cost + batch - A.max
local last = nil
while excess > 0 do
  local old = redis.call('XRANGE', skey, last and ('(' .. last) or '-', '+', 'COUNT', 128)
  if #old == 0 then
    cost = 0
    break
  end
  for _, e in ipairs(old) do
    local n = #e[2][6] + 1 -- fields s, t, l in the order XADD wrote them
    excess = excess - n - A.over
    cost = cost - n - A.over
    dropped = dropped + n
    last = e[1]
    if excess <= 0 then break end
  end
end
if last then
  local ms, seq = string.match(last, '^(%d+)%-(%d+)$')
  redis.call('XTRIM', skey, 'MINID', ms .. '-' .. string.format('%d', tonumber(seq) + 1))
end

for i = first, #lines do
  local l = lines[i]
  redis.call('XADD', skey, '*', 's', l[1], 't', string.format('%d', l[2]), 'l', l[3])
end
cost = cost + batch
local fields = { attempt .. ':c', string.format('%d', cost), attempt .. ':d', string.format('%d', dropped) }
if A.fin then
  fields[#fields + 1] = attempt .. ':e'
  fields[#fields + 1] = string.format('%d', now())
end
redis.call('HSET', mkey, unpack(fields))
redis.call('SPUBLISH', B .. 'lg', pid .. ' ' .. attempt)
return reply({ bytes = cost, dropped = dropped })
