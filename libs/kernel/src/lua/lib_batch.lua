-- ---------------------------------------------------------------- batches

-- Run `fn(...)` for the entry at 0-based `index` of a batch: a refusal it raises names the entry
-- (`details.index`, and the message starts `children[i]: `). Checks only: nothing is written yet.
local function at_entry(index, fn, ...)
  local results = { pcall(fn, ...) }
  if results[1] then return unpack(results, 2) end
  local err = results[2]
  -- a refusal caught by pcall reads `user_script:<line>: LIBOS {json}`
  local text = err
  if type(err) == 'table' then text = err.err end
  local json = type(text) == 'string' and string.match(text, 'LIBOS (%b{})')
  if json then
    local e = cjson.decode(json)
    local details = e.details
    if type(details) ~= 'table' or details[1] ~= nil then details = {} end
    details.index = index
    e.details = details
    e.message = 'children[' .. index .. ']: ' .. e.message
    error({ err = 'LIBOS ' .. cjson.encode(e) })
  end
  error(err)
end
