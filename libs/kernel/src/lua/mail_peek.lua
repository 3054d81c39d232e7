-- needs: mail
-- Admin read of a mailbox, acknowledged and not: reads only (never acknowledges, never consumes
-- a notice, never taints). A: pid, filter (kind, sender = self|parent|pid, channel,
-- correlation_id, reply_to, message_ids: as read_process_messages), acked (nil: both; true: only
-- acknowledged; false: only unread), after (a message number: only later ones), limit.
-- Refusals: not_found (no such process). Reply: head {total (matches after `after`), unacked,
-- acked (mailbox counts), interrupt, normal (notices not yet delivered)}, then a header and a
-- content string per returned message, in arrival order.
local P = A.pid
local pr = load(P, { 'status', 'parent' })
if not pr then fail('not_found', nil, 'no such process ' .. P) end
local f = A.filter
if f.sender == 'self' then f.sender = P elseif f.sender == 'parent' then f.sender = pr.parent end
local mm, mu, ma = mkey('mm', P), mkey('mu', P), mkey('ma', P)
local ns
if A.acked == true then
  ns = redis.call('ZRANGEBYSCORE', ma, '(' .. A.after, '+inf')
elseif A.acked == false then
  ns = redis.call('ZRANGEBYSCORE', mu, '(' .. A.after, '+inf')
else
  ns = redis.call('ZUNION', 2, mu, ma)
end
local out, total = {}, 0
for _, n in ipairs(ns) do
  if tonumber(n) > A.after then
    local raw = redis.call('HGET', mm, n)
    if raw then
      local h = cjson.decode(raw)
      if matches(h, mid(n), f) then
        total = total + 1
        if total <= A.limit then
          out[#out + 1] = raw
          out[#out + 1] = redis.call('HGET', mm, n .. ':c') or '{}'
        end
      end
    end
  end
end
return reply({ total = total, unacked = redis.call('ZCARD', mu), acked = redis.call('ZCARD', ma),
  interrupt = redis.call('ZCARD', mkey('mi', P)), normal = redis.call('ZCARD', mkey('mn', P)) }, unpack(out))
