-- Shared helpers, concatenated before every tree script at load time (after lib_index.lua).
-- KEYS[1] is the tree's counter hash (it carries the tree hash tag, so the script runs on the
-- tree's slot); ARGV[1] is the tree's key base `<prefix>{<root>}:`; ARGV[2] the JSON arguments.
-- Every script checks everything before its first write: a Lua error does not roll back.
local B = ARGV[1]
local ROOT = string.match(B, '{([^}]*)}:$')
local A = cjson.decode(ARGV[2])
local NULL = cjson.null
local DIMS = { 'tokens', 'cost_usd', 'steps', 'wall_ms', 'children', 'object_bytes' }
local TERMINAL = { exited = true, failed = true, killed = true }
local IDX = {}
-- Rows this call changed or created, `{pid, gen, status}`: published once by reply() on the
-- tree's `ev` channel as `<root> <json list>` (the console's live view; lease renewals are not).
local EV = {}
-- Retention: the earliest time a process of this tree recorded as due may be deleted (see
-- lib_retain.lua), and the tree's due-set version; the reply carries both so the TypeScript
-- layer can mark the tree in its sweep shard.
local GC = nil
-- Notices due to a token-proven caller when its call began (see check_token).
local ND = nil
-- The tree's cascade of terminal transitions has work left (lib_terminal.lua): the reply's `tq`
-- tells the kernel to continue it (terminate_more.lua).
local TQ = nil
local NOW = nil

local function now()
  if not NOW then
    local t = redis.call('TIME')
    NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return NOW
end

-- The Redis server running this script: its run_id, new at every start of every server.
local SERVER = nil
local function server_id()
  if not SERVER then SERVER = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)') or '' end
  return SERVER
end

-- A tree's epoch (ms) when its counter hash has none (trees created before it was kept).
local DEFAULT_EPOCH = 1767225600000
local COUNTERS = { 'p', 'o', 'm' }

-- The next number of a tree's counter `field` (p: children, o: objects, m: messages), never one
-- handed out before, even after a failover or a restart that lost writes. Numbers count up by
-- one while the same server keeps the tree ('sv' its run_id). When another server (a promoted
-- replica, or this one restarted) takes its first number for the tree, every counter first jumps
-- to the tree's clock: 10 µs units since its epoch ('ep'). A tree takes far fewer than 100
-- numbers a millisecond, so every number it ever handed out (kept or lost) is below its clock
-- when handed out, hence below the clock at the jump (when the servers' clocks agree to better
-- than a failover takes). Numbers stay short and ordered: `.1`, `.2`… and, after a failover,
-- e.g. `.8640000001` a day into the tree.
-- Content bytes leaving the tree's mailboxes: off the count send.lua bounds (KEYS[1]'s `mb`).
local function untree_mail(bytes)
  if bytes <= 0 then return end
  local held = tonumber(redis.call('HGET', KEYS[1], 'mb') or '0') or 0
  redis.call('HSET', KEYS[1], 'mb', math.max(0, held - bytes))
end

local function next_number(field)
  local h = redis.call('HMGET', KEYS[1], 'sv', 'ep', 'p', 'o', 'm')
  local server = server_id()
  local values = { p = tonumber(h[3]) or 0, o = tonumber(h[4]) or 0, m = tonumber(h[5]) or 0 }
  if h[1] ~= server then
    local t = redis.call('TIME')
    local epoch = tonumber(h[2]) or DEFAULT_EPOCH
    local clock = math.floor((tonumber(t[1]) * 1000000 + tonumber(t[2]) - epoch * 1000) / 10)
    local jumped = { 'sv', server }
    for _, f in ipairs(COUNTERS) do
      if values[f] < clock then
        if f == 'p' and values.p > 0 then
          -- the skipped child numbers (from, to], so a walk of the tree's pids skips them
          local gaps = redis.call('HGET', KEYS[1], 'pj')
          local gap = string.format('%.0f:%.0f', values.p, clock)
          redis.call('HSET', KEYS[1], 'pj', gaps and (gaps .. ',' .. gap) or gap)
        end
        values[f] = clock
      end
      jumped[#jumped + 1] = f
      jumped[#jumped + 1] = string.format('%.0f', values[f])
    end
    redis.call('HSET', KEYS[1], unpack(jumped))
  end
  local n = values[field] + 1
  local text = string.format('%.0f', n)
  redis.call('HSET', KEYS[1], field, text)
  return n, text
end

local function fail(code, reason, message, details)
  error({ err = 'LIBOS ' .. cjson.encode({ code = code, reason = reason, message = message, details = details }) })
end

local function given(v)
  return v ~= nil and v ~= NULL
end

-- cjson encodes an empty table as {}; lists are stored as [] so TypeScript reads arrays.
local function jlist(t)
  if #t == 0 then return '[]' end
  return cjson.encode(t)
end

local function jdecode(s, default)
  if s == nil or s == '' then return default end
  return cjson.decode(s)
end

local function pkey(pid) return B .. 'p:' .. pid end
local function kkey(pid) return B .. 'k:' .. pid end
local function hkey(pid) return B .. 'h:' .. pid end
local function ownkey(pid) return B .. 'own:' .. pid end
local function okey(oid)
  local n = string.match(oid, '/o(%d+)$')
  if not n then fail('invalid_argument', nil, 'not an object id: ' .. tostring(oid)) end
  return B .. 'o:' .. n
end
local function root_of(pid)
  return (string.match(pid, '^([^.]+)'))
end

-- A process that is not there: one this tree numbered before was deleted after its retention
-- period (or by an operator); say so rather than "no such process".
local function absent(pid)
  local n = tonumber(string.match(pid, '%.(%d+)$') or '')
  local seq = redis.call('HMGET', KEYS[1], 'p', 'pj')
  if n and seq[2] then
    -- a number in a gap a jump skipped was never handed out (see next_number)
    for from, to in string.gmatch(seq[2], '(%d+):(%d+)') do
      if n > tonumber(from) and n <= tonumber(to) then n = nil; break end
    end
  end
  if n and n <= tonumber(seq[1] or '0') then
    fail('not_found', 'deleted', 'process ' .. pid .. ' was deleted after its retention period ended')
  end
  fail('not_found', nil, 'no such process ' .. pid .. ' (never created, or deleted after its retention period ended)')
end

-- Row fields a row omits while they hold their default: new rows write only what differs, which
-- keeps spawns cheap. Every omitted default reads as '' / '0' / '[]' / '{}' (TypeScript alike).
local DEFAULTS = {
  parent = '', input = '', image = '', ispec = '', idef = '{}', iskills = '[]', paths = '[]', ws = '',
  pfrom = '', preason = '', gate = '', outcome = '', result = '', fence = '', worker = '', lease = '0',
  psig = '', th = '', skills = '[]', taint = '[]', caps = '[]', roots = '[]', eph = '[]', merged = '0',
  released = '0', uc = '0', n = '0',
}
for _, d in ipairs(DIMS) do
  DEFAULTS['br:' .. d] = '0'
  DEFAULTS['bu:' .. d] = '0'
end

-- A row as a table: every field (HGETALL), or only `fields` (HMGET; hot paths). nil if absent.
local function load(pid, fields)
  if fields then
    local values = redis.call('HMGET', pkey(pid), unpack(fields))
    if not values[1] then return nil end
    local r = {}
    for i, f in ipairs(fields) do r[f] = values[i] or DEFAULTS[f] end
    return r
  end
  local flat = redis.call('HGETALL', pkey(pid))
  if #flat == 0 then return nil end
  local r = {}
  for i = 1, #flat, 2 do r[flat[i]] = flat[i + 1] end
  for k, v in pairs(DEFAULTS) do
    if r[k] == nil then r[k] = v end
  end
  return r
end

-- What callers and addressees need on hot paths (status first: it tells absence).
local CORE = { 'status', 'parent', 'gen', 'lease', 'ws', 'clr', 'taint' }

local function flat_row(pid)
  return redis.call('HGETALL', pkey(pid))
end

-- Only `fields` of a row, flat like HGETALL (absent ones left out): for replies that need few.
local function fields_row(pid, fields)
  local values = redis.call('HMGET', pkey(pid), unpack(fields))
  local flat = {}
  for i, f in ipairs(fields) do
    if values[i] then
      flat[#flat + 1] = f
      flat[#flat + 1] = values[i]
    end
  end
  return flat
end

local function hset(pid, r, fields)
  local args = {}
  for k, v in pairs(fields) do
    local s = tostring(v)
    if type(v) == 'number' then s = string.format('%d', v) end
    r[k] = s
    args[#args + 1] = k
    args[#args + 1] = s
  end
  if #args > 0 then redis.call('HSET', pkey(pid), unpack(args)) end
end

-- The tree's processes by status, `n:<status>` on its counter hash (KEYS[1]): kept by every row
-- creation (new_row), transition (bump) and deletion (gc), so an operator's list of roots shows
-- each tree's counts without reading its rows. A tree created with them has `sc` = 1.
local function count_status(status, delta)
  if status and status ~= '' then redis.call('HINCRBY', KEYS[1], 'n:' .. status, delta) end
end

-- A transition: write the fields, bump state_generation, record it for the status index.
local function bump(pid, r, fields)
  local from = r.status
  fields.gen = tonumber(r.gen) + 1
  fields.ut = now()
  hset(pid, r, fields)
  if fields.status and fields.status ~= from then
    count_status(from, -1)
    count_status(fields.status, 1)
  end
  IDX[#IDX + 1] = { pid, tonumber(r.gen), r.status, tonumber(r.lease or '0'), r.ct and tonumber(r.ct) }
  EV[#EV + 1] = { pid, fields.gen, r.status }
end

local function reply(head, ...)
  -- On one server the kernel names the tree's index shard (`A.ix`): the script writes its own
  -- records there (lib_index.lua), unless it made more than `A.ixm`; else they go back to the
  -- kernel, which batches them (a Redis Cluster's shards are other slots).
  if A.ix and #IDX <= A.ixm then
    index_apply(A.ix, IDX)
  else
    head.idx = IDX
  end
  head.nd = ND
  if #EV > 0 then redis.call('SPUBLISH', B .. 'ev', ROOT .. ' ' .. cjson.encode(EV)) end
  head.gc = GC
  head.tq = TQ
  return { cjson.encode(head), ... }
end

-- ---------------------------------------------------------------- callers and addressing

-- A caller that presented a token (`A.th`, the sha256 of its secret) is checked against its row
-- in the same step as what it does: a token dies at the terminal transition, which clears `th`.
-- It also learns whether notices were due to it when the call began (the reply carries `nd`).
local function check_token(pid, r)
  if not A.th then return end
  if not r or r.th ~= A.th then
    if r and TERMINAL[r.status] then
      fail('unauthenticated', 'terminal_caller', 'the calling process ' .. pid .. ' is ' .. r.status)
    end
    fail('unauthenticated', 'invalid_token', 'the token is not valid')
  end
  ND = { i = redis.call('EXISTS', B .. 'mi:' .. pid), n = redis.call('EXISTS', B .. 'mn:' .. pid) }
end

-- The caller must be live and acting. `recheck`: a blocking call already in flight re-checks
-- its wait; a caller paused meanwhile still gets the answer of its saved wait.
local function caller_row(pid, fields, recheck)
  if A.th and fields then
    local with_th = { 'th' }
    for _, f in ipairs(fields) do with_th[#with_th + 1] = f end
    fields = with_th
  end
  local r = load(pid, fields)
  check_token(pid, r)
  if not r then fail('not_found', nil, 'no such process ' .. pid) end
  if TERMINAL[r.status] then
    fail('failed_precondition', 'terminal_caller', 'the calling process ' .. pid .. ' is ' .. r.status)
  end
  if r.status == 'paused' and not recheck then
    fail('failed_precondition', 'paused_caller', 'the calling process ' .. pid .. ' is paused')
  end
  if r.status == 'runnable' then
    fail('failed_precondition', 'not_runnable', 'the calling process ' .. pid .. ' has not been claimed')
  end
  return r
end

-- A caller that acts is no longer blocked: a pending wait it left behind is dropped.
local function touch(pid, r)
  if r.status == 'waiting_event' then bump(pid, r, { status = 'running', ws = '' }) end
end

local function child_of(parent, child, fields)
  local c = load(child, fields)
  if not c then absent(child) end
  if c.parent ~= parent then
    fail('permission_denied', 'not_direct_child', child .. ' is not a direct child of ' .. parent)
  end
  return c
end

-- ---------------------------------------------------------------- labels and clearance

local function label_set(list)
  local s = {}
  for _, l in ipairs(list) do s[l] = true end
  return s
end

-- Labels outside the clearance (empty when the clearance covers them all).
local function outside(clearance, labels)
  local s = label_set(clearance)
  if s['*'] then return {} end
  local missing = {}
  for _, l in ipairs(labels) do
    if not s[l] then missing[#missing + 1] = l end
  end
  return missing
end

local function union(a, b)
  local s, out = {}, {}
  for _, l in ipairs(a) do if not s[l] then s[l] = true; out[#out + 1] = l end end
  for _, l in ipairs(b) do if not s[l] then s[l] = true; out[#out + 1] = l end end
  table.sort(out)
  return out
end

local function require_flow(clearance, labels, what)
  local missing = outside(clearance, labels)
  if #missing > 0 then
    fail('permission_denied', 'data_flow', what .. ' carries labels outside the clearance: ' .. table.concat(missing, ', '),
      { labels = missing })
  end
end

-- Reading labelled data taints the reader; what it creates later carries the taint.
local function taint(pid, r, labels)
  local cur = jdecode(r.taint, {})
  local new = union(cur, labels)
  if #new ~= #cur then hset(pid, r, { taint = jlist(new) }) end
end
