-- The kernel's batch of index records for one shard (lib_index.lua, before this file).
-- KEYS[1] = <prefix>{idx<n>}:gen, ARGV[1] = <prefix>{idx<n>}:, ARGV[2] = JSON [[pid, gen, status,
-- lease, created?], ...]. ARGV[3] (optional) = JSON {outcome type: n}: worker completions to add
-- to the metrics counter.
index_apply(ARGV[1], cjson.decode(ARGV[2]))
if ARGV[3] then
  for outcome, n in pairs(cjson.decode(ARGV[3])) do index_count(ARGV[1], outcome, n) end
end
return 1
