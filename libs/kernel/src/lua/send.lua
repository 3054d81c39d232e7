-- needs: mail
-- send_process_message: only to self, the parent or a direct child, never a terminal process.
-- A: caller, to, kind, channel?, correlation_id?, reply_to?, content (JSON {body, payload}),
-- labels?, max (the mailbox bound on unacknowledged messages), max_bytes (its bound on content bytes),
-- tree_max_bytes (the bound on the content bytes of all the tree's mailboxes, KEYS[1]'s `mb`).
-- Refusals: resource_exhausted/mailbox_full (details.bound `count`, `bytes` or `tree_bytes`), before any write.
local S = A.caller
local sr = caller_row(S, CORE)
local R
if A.to == 'self' or A.to == S then
  R = S
elseif A.to == 'parent' or (A.to == sr.parent and sr.parent ~= '') then
  if sr.parent == '' then fail('failed_precondition', 'no_parent', S .. ' is a root and has no parent') end
  R = sr.parent
else
  R = A.to
end
local rr = sr
if R ~= S then
  rr = load(R, CORE)
  if not rr then fail('not_found', nil, 'no such process ' .. R) end
  if R ~= sr.parent and rr.parent ~= S then
    fail('permission_denied', 'not_direct_child', R .. ' is not the parent or a direct child of ' .. S)
  end
end
if TERMINAL[rr.status] then fail('failed_precondition', 'terminal', R .. ' is ' .. rr.status) end
local labels = jdecode(sr.taint, {})
if given(A.labels) then
  require_flow(jdecode(sr.clr, {}), A.labels, 'the message')
  labels = union(labels, A.labels)
end
require_flow(jdecode(rr.clr, {}), labels, 'the message')
local unacked = redis.call('ZCARD', mkey('mu', R))
if unacked >= A.max then
  fail('resource_exhausted', 'mailbox_full', 'the mailbox of ' .. R .. ' holds ' .. unacked .. ' unacknowledged messages',
    { bound = 'count', limit = A.max })
end
-- bytes: mm's `b` counts the content bytes it holds, `ba` those of acknowledged messages (which
-- are trimmed, oldest first, to make room: ack is not deletion, but keeping them is best effort)
local size = #A.content
local held = redis.call('HMGET', mkey('mm', R), 'b', 'ba')
local bytes, acked_bytes = tonumber(held[1] or '0') or 0, tonumber(held[2] or '0') or 0
if bytes - acked_bytes + size > A.max_bytes then
  fail('resource_exhausted', 'mailbox_full', 'the mailbox of ' .. R .. ' holds ' .. (bytes - acked_bytes) ..
    ' bytes of unacknowledged messages; this message of ' .. size .. ' bytes would pass its bound of ' .. A.max_bytes,
    { bound = 'bytes', limit = A.max_bytes, bytes = bytes - acked_bytes, requested = size })
end
-- The tree's mailboxes together: a tree spawns children at will, each with a mailbox, and one
-- tree must not fill Redis for every other (the recipient's acknowledged messages make room).
local tree_bytes = tonumber(redis.call('HGET', KEYS[1], 'mb') or '0') or 0
if tree_bytes - acked_bytes + size > A.tree_max_bytes then
  fail('resource_exhausted', 'mailbox_full', 'the mailboxes of the tree of ' .. R .. ' hold ' .. tree_bytes ..
    ' bytes; this message of ' .. size .. ' bytes would pass their bound of ' .. A.tree_max_bytes,
    { bound = 'tree_bytes', limit = A.tree_max_bytes, bytes = tree_bytes, requested = size })
end

-- ------------------------------------------------------------ writes
touch(S, sr)
local n, ntext = next_number('m')
local id = mid(ntext)
while bytes + size > A.max_bytes or tree_bytes + size > A.tree_max_bytes do
  local oldest = redis.call('ZRANGE', mkey('ma', R), 0, 0)[1]
  if not oldest then break end
  local freed = redis.call('HSTRLEN', mkey('mm', R), oldest .. ':c')
  redis.call('HDEL', mkey('mm', R), oldest, oldest .. ':c')
  redis.call('ZREM', mkey('ma', R), oldest)
  bytes, acked_bytes, tree_bytes = bytes - freed, acked_bytes - freed, tree_bytes - freed
  redis.call('HSET', mkey('mm', R), 'b', bytes, 'ba', acked_bytes)
end
redis.call('HINCRBY', mkey('mm', R), 'b', size)
redis.call('HSET', KEYS[1], 'mb', tree_bytes + size)
local h = { s = S, r = R, k = A.kind, c = A.channel, q = A.correlation_id, t = A.reply_to, l = labels,
  ts = now(), a = 0, n = n }
redis.call('HSET', mkey('mm', R), n, cjson.encode(h), ntext .. ':c', A.content)
redis.call('ZADD', mkey('mu', R), n, n)
if A.kind == 'interrupt' then
  redis.call('ZADD', mkey('mi', R), n, n)
else
  redis.call('ZADD', mkey('mn', R), n, n)
end
redis.call('SPUBLISH', B .. 'm', R .. ' ' .. id)
local ws = jdecode(rr.ws, nil)
if ws and ws.type == 'message' and matches(h, id, ws.filter) then
  if rr.status == 'waiting_event' then bump(R, rr, { status = 'running', ws = '' }) else bump(R, rr, { ws = '' }) end
end
return reply({ message_id = id, created_at = now() })
