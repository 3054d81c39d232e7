-- needs: mail
-- read_process_messages and receive_process_messages (receive = true).
-- A: caller, filter, include_acked, ack, limit, receive, block, recheck, retention.
-- Returns the head, then a header and a content string per returned message.
local P = A.caller
local pr = caller_row(P, CORE, A.recheck)
local f = A.filter
if f.sender == 'self' then
  f.sender = P
elseif f.sender == 'parent' then
  if pr.parent == '' then fail('failed_precondition', 'no_parent', P .. ' is a root and has no parent') end
  f.sender = pr.parent
end

local mm, mu, ma = mkey('mm', P), mkey('mu', P), mkey('ma', P)
local plain = not (given(f.kind) or given(f.sender) or given(f.channel) or given(f.correlation_id)
  or given(f.reply_to) or given(f.message_ids))
local picked, headers, total = {}, {}, 0

if plain and not A.include_acked then
  -- no header filters: the unacked index answers directly
  total = redis.call('ZCARD', mu)
  if A.limit > 0 then picked = redis.call('ZRANGE', mu, 0, A.limit - 1) end
else
  local ns
  if given(f.message_ids) then
    local seen = {}
    ns = {}
    for _, id in ipairs(f.message_ids) do
      local n = mnum(id)
      if n and not seen[n] then seen[n] = true; ns[#ns + 1] = n end
    end
    table.sort(ns, function(a, b) return tonumber(a) < tonumber(b) end)
  elseif A.include_acked then
    ns = redis.call('ZUNION', 2, mu, ma)
  else
    ns = redis.call('ZRANGE', mu, 0, -1)
  end
  for _, n in ipairs(ns) do
    local raw = redis.call('HGET', mm, n)
    if raw then
      local h = cjson.decode(raw)
      if (A.include_acked or h.a == 0) and matches(h, mid(n), f) then
        total = total + 1
        if #picked < A.limit then
          picked[#picked + 1] = n
          headers[n] = h
        end
      end
    end
  end
end

local head = { omitted = total - #picked, ready = total > 0 }

-- ------------------------------------------------------------ writes
if A.receive and A.block and total == 0 then
  local wf = { kind = f.kind, sender = f.sender, channel = f.channel, correlation_id = f.correlation_id,
    reply_to = f.reply_to, message_ids = f.message_ids, include_acked = A.include_acked }
  local function same(a, b)
    for _, k in ipairs({ 'kind', 'sender', 'channel', 'correlation_id', 'reply_to', 'include_acked' }) do
      if a[k] ~= b[k] then return false end
    end
    local x, y = a.message_ids or {}, b.message_ids or {}
    if #x ~= #y then return false end
    for i = 1, #x do if x[i] ~= y[i] then return false end end
    return true
  end
  local ws = jdecode(pr.ws, nil)
  local registered = pr.status == 'waiting_event' and ws and ws.type == 'message' and same(ws.filter, wf)
  if not registered and pr.status ~= 'paused' then
    bump(P, pr, { status = 'waiting_event', ws = cjson.encode({ type = 'message', filter = wf, since = now() }) })
  end
  return reply(head)
end
touch(P, pr)

local out, acked, labels = {}, {}, {}
for _, n in ipairs(picked) do
  local h, content = headers[n], nil
  if h then
    content = redis.call('HGET', mm, n .. ':c')
  else
    local both = redis.call('HMGET', mm, n, n .. ':c')
    h, content = cjson.decode(both[1]), both[2]
  end
  local encoded = nil
  if A.ack and h.a == 0 then
    h.a = 1
    h.at = now()
    encoded = cjson.encode(h)
    redis.call('HSET', mm, n, encoded)
    redis.call('ZREM', mu, n)
    redis.call('ZADD', ma, n, n)
    redis.call('ZREM', mkey(h.k == 'interrupt' and 'mi' or 'mn', P), n)
    redis.call('HINCRBY', mm, 'ba', #(content or ''))
    acked[#acked + 1] = mid(n)
  end
  for _, l in ipairs(h.l or {}) do labels[#labels + 1] = l end
  out[#out + 1] = encoded or cjson.encode(h)
  out[#out + 1] = content or '{}'
end
if #labels > 0 then taint(P, pr, labels) end

-- acknowledged messages are kept (ack is not deletion) up to the retention bound
if #acked > 0 then
  local over = redis.call('ZCARD', ma) - A.retention
  if over > 0 then
    local trimmed = 0
    for _, n in ipairs(redis.call('ZRANGE', ma, 0, over - 1)) do
      local freed = redis.call('HSTRLEN', mm, n .. ':c')
      redis.call('HINCRBY', mm, 'b', -freed)
      redis.call('HINCRBY', mm, 'ba', -freed)
      redis.call('HDEL', mm, n, n .. ':c')
      trimmed = trimmed + freed
    end
    untree_mail(trimmed)
    redis.call('ZREMRANGEBYRANK', ma, 0, over - 1)
  end
end
head.acked = acked
return reply(head, unpack(out))
