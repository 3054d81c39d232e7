-- needs: (lib only)
-- Admin read of a process's subtree (reads only; one slot: the tree's). A: pid, max (nodes),
-- goal_bytes (goals are cut to this many bytes). Breadth-first from pid, each node's children
-- in spawn order (numeric: .2 before .10), so a truncated answer keeps the upper levels whole.
-- Refusals: not_found (no such process). Reply: head {truncated}, then per node a flat
-- field/value list (NODE fields present on the row, plus `depth`, `kids` (its child count) and
-- `gcut` = 1 when the goal was cut).
local NODE = { 'pid', 'parent', 'status', 'image', 'goal', 'outcome', 'ct', 'ut', 'et', 'attempt',
  'preason', 'gate', 'psig', 'ws', 'driver', 'mode' }
for _, d in ipairs(DIMS) do
  NODE[#NODE + 1] = 'bl:' .. d
  NODE[#NODE + 1] = 'br:' .. d
  NODE[#NODE + 1] = 'bu:' .. d
end
if redis.call('EXISTS', pkey(A.pid)) == 0 then fail('not_found', nil, 'no such process ' .. A.pid) end
local out, queue, depth, head, truncated = {}, { A.pid }, { [A.pid] = 0 }, 1, false
while head <= #queue do
  if #out >= A.max then
    truncated = true
    break
  end
  local pid = queue[head]
  head = head + 1
  local row = fields_row(pid, NODE)
  if #row > 0 then
    local kids = redis.call('ZRANGE', kkey(pid), 0, -1)
    for i = 1, #row, 2 do
      if row[i] == 'goal' and #row[i + 1] > A.goal_bytes then
        row[i + 1] = string.sub(row[i + 1], 1, A.goal_bytes)
        row[#row + 1] = 'gcut'
        row[#row + 1] = '1'
      end
    end
    row[#row + 1] = 'depth'
    row[#row + 1] = tostring(depth[pid])
    row[#row + 1] = 'kids'
    row[#row + 1] = tostring(#kids)
    out[#out + 1] = row
    for _, c in ipairs(kids) do
      depth[c] = depth[pid] + 1
      queue[#queue + 1] = c
    end
  end
end
return reply({ truncated = truncated }, unpack(out))
