-- needs: (lib only)
-- log_read: a page of one attempt's child log, and whether that log has ended. Changes nothing.
-- Keys: B p:<pid>, B log:<pid>:<attempt>, B logm:<pid> (see log_append).
-- A: pid, attempt (0 = the process's latest), after ('' = from the oldest line kept; else a
-- stream id: the lines after it), limit (lines at most).
-- A log has ended when its worker said so (its last batch), or when no worker will write to it:
-- a later attempt exists, the attempt was recovered as stale, the process is caller-driven, or
-- it is terminal and its worker's completion is in (or it was killed without one). A worker
-- writes a log's last batch before it reports the completion.
-- Refusals: not_found (no such process), invalid_argument/no_attempt (no such attempt).
-- Reply: head {attempt, dropped, ended, more}, then one list of the lines, flat: [id, s, t, l, ...].
local pid = A.pid
local r = load(pid, { 'status', 'attempt', 'run', 'uc', 'outcome' })
if not r then fail('not_found', nil, 'no such process ' .. pid) end
local latest = tonumber(r.attempt)
local attempt = A.attempt
if attempt == 0 then attempt = latest end
if attempt > latest then
  fail('invalid_argument', 'no_attempt', pid .. ' has no attempt ' .. attempt .. ' (its latest is ' .. latest .. ')')
end
local m = redis.call('HMGET', B .. 'logm:' .. pid, attempt .. ':d', attempt .. ':e')
local ended = m[2] ~= false
if not ended then
  if attempt == 0 or attempt < latest or r.run == 'stale' or r.run == 'none' then
    ended = true
  elseif r.run == 'done' then
    -- terminal; after a process_exit its worker still runs the child until the completion
    ended = r.uc == '1' or jdecode(r.outcome, {}).type == 'killed'
  end
end
local out = {}
local more = false
if attempt > 0 then
  local from = '-'
  if A.after ~= '' then from = '(' .. A.after end
  local entries = redis.call('XRANGE', B .. 'log:' .. pid .. ':' .. attempt, from, '+', 'COUNT', A.limit + 1)
  for i, e in ipairs(entries) do
    if i > A.limit then
      more = true
      break
    end
    out[#out + 1] = e[1]
    out[#out + 1] = e[2][2]
    out[#out + 1] = e[2][4]
    out[#out + 1] = e[2][6]
  end
end
return reply({ attempt = attempt, dropped = tonumber(m[1] or '0'), ended = ended, more = more }, out)
