-- needs: budget objects terminal attempts
-- The reaper: a live attempt whose lease expired is never re-run by itself. With a pending
-- cancel/terminate it is killed (that was the intent); otherwise paused, reason
-- stale_execution, behind a host-only resume gate. A: pid.
local pid = A.pid
local r = load(pid)
if not r then return reply({ recovered = false, gone = true }) end
if r.run ~= 'live' then return reply({ recovered = false, gone = true }) end
if tonumber(r.lease) > now() then return reply({ recovered = false, lease = tonumber(r.lease) }) end
local psig = jdecode(r.psig, nil)
attempt_ended(pid, r, psig and 'killed' or 'stale_execution', psig and (psig.reason or psig.signal) or nil)
if psig then
  terminalize(pid, r, 'killed', outcome_killed(pid, r, psig.reason or psig.signal), '')
else
  local from = r.status
  if from == 'paused' then from = r.pfrom end
  bump(pid, r, { status = 'paused', pfrom = from, preason = 'stale_execution', gate = 'host', run = 'stale',
    th = '', ws = '', lease = 0 })
end
return reply({ recovered = true }, flat_row(pid))
