-- ---------------------------------------------------------------- attempt history
-- `att` on the row: JSON list of the process's last attempts, oldest first (at most A.att_max,
-- the kernel's `attemptHistory`; older entries are dropped): {n = attempt, w = worker id,
-- c = claimed at (ms; the process is `running` from its claim), e = ended at (ms), o = how it
-- ended (outcome type, or `stale_execution`), r = the reason (first 200 bytes)}.

-- The encoded history with a new entry for the attempt `r.attempt` claimed by `worker` now.
local function attempt_claimed(r, worker, max)
  local att = jdecode(r.att, {})
  att[#att + 1] = { n = tonumber(r.attempt), w = worker, c = now() }
  while #att > (max or 20) do table.remove(att, 1) end
  return cjson.encode(att)
end

-- Mark the current attempt ended (once); a no-op when it has no entry or already ended.
local function attempt_ended(pid, r, ending, reason)
  local att = jdecode(r.att, {})
  local last = att[#att]
  if not last or last.n ~= tonumber(r.attempt) or last.e then return end
  last.e = now()
  last.o = ending
  if type(reason) == 'string' and reason ~= '' then last.r = string.sub(reason, 1, 200) end
  hset(pid, r, { att = cjson.encode(att) })
end
