-- A shard's lock, held by one coordinator at a time (retention and reaper shards). KEYS[1] = the
-- lock, ARGV[1] = op, ARGV[2] = the holder's token:
--   take     ARGV[3] = ms: claim the lock when free, or extend it when this token holds it
--   release  drop the lock if this token holds it (an expired lock another took stays theirs)
-- Reply: 1 done, 0 held by another (take) or not held by this token (release). Publishes nothing.
local op, token = ARGV[1], ARGV[2]
local holder = redis.call('GET', KEYS[1])
if op == 'take' then
  if holder == token then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
    return 1
  end
  if holder then return 0 end
  redis.call('SET', KEYS[1], token, 'PX', ARGV[3])
  return 1
elseif op == 'release' then
  if holder ~= token then return 0 end
  redis.call('DEL', KEYS[1])
  return 1
end
return redis.error_reply('lock: unknown op ' .. tostring(op))
