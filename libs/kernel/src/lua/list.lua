-- needs: (lib only)
-- list_child_processes: direct children only, in spawn order. A: caller, include_terminal.
caller_row(A.caller, { 'status' })
local rows = {}
for _, c in ipairs(redis.call('ZRANGE', kkey(A.caller), 0, -1)) do
  local row = flat_row(c)
  if A.include_terminal then
    rows[#rows + 1] = row
  else
    local status = redis.call('HGET', pkey(c), 'status')
    if not TERMINAL[status] then rows[#rows + 1] = row end
  end
end
return reply({}, rows)
