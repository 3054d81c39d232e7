-- ---------------------------------------------------------------- mailboxes
-- mm:<pid> hash: <n> -> header JSON, <n>:c -> content JSON. mu/ma: unacked/acked zsets of n
-- (score n, so arrival order). mi/mn: interrupt/normal notices not yet delivered.

local function mkey(kind, pid) return B .. kind .. ':' .. pid end
local function mid(n) return ROOT .. '/m' .. n end
local function mnum(id) return string.match(id, '^' .. ROOT .. '/m(%d+)$') end

-- A message header against a filter (all given fields must match: ANDed).
local function matches(h, id, f)
  if given(f.kind) and h.k ~= f.kind then return false end
  if given(f.sender) and h.s ~= f.sender then return false end
  if given(f.channel) and h.c ~= f.channel then return false end
  if given(f.correlation_id) and h.q ~= f.correlation_id then return false end
  if given(f.reply_to) and h.t ~= f.reply_to then return false end
  if given(f.message_ids) then
    local found = false
    for _, x in ipairs(f.message_ids) do if x == id then found = true; break end end
    if not found then return false end
  end
  return true
end
