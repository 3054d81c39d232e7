-- ---------------------------------------------------------------- rows

-- Write a new row: `f` names every field the process has; those at their default are omitted.
-- Returns the written field/value list (the launch result is built from it).
local function new_row(pid, f)
  local args = { 'pid', pid, 'gen', '1', 'ct', string.format('%d', now()) }
  for k, v in pairs(f) do
    local s = v
    if type(v) == 'number' then s = string.format('%d', v) end
    if DEFAULTS[k] ~= s then
      args[#args + 1] = k
      args[#args + 1] = s
    end
  end
  redis.call('HSET', pkey(pid), unpack(args))
  count_status(f.status, 1)
  IDX[#IDX + 1] = { pid, 1, f.status, 0, now() }
  EV[#EV + 1] = { pid, 1, f.status }
  return args
end
