-- Advances the projection's asOf positions; each field only ever moves forward.
-- KEYS[1]  hash: "epoch" -> id of the projection's current life; "rebuilding" -> "1" while the
--          projection is rebuilt after a loss (readers then say stale); numeric fields: positions
--          and the times and counts that go with them (see schema/redis_keys.py)
-- ARGV[1]  the epoch the caller built on; ARGV[2] "1" when these positions complete a rebuild
--          (clears "rebuilding" in the same step); then pairs: field, number
-- Returns  1, or 0 when the epoch differs (Redis lost the projection: the caller must rebuild).
if redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[1] then return 0 end
for i = 3, #ARGV, 2 do
  local current = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '-1')
  if tonumber(ARGV[i + 1]) > current then redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
if ARGV[2] == '1' then redis.call('HDEL', KEYS[1], 'rebuilding') end
return 1
