-- Advances the projection's asOf positions; each only ever moves forward.
-- KEYS[1]  hash: "epoch" -> id of the projection's current life; "<partition>" -> offset;
--          "accepted_at" -> newest acceptance time reflected (ms); "rebuilding" -> "1" while the
--          projection is rebuilt after a loss (readers then say stale)
-- ARGV[1]  the epoch the caller built on; ARGV[2] accepted_at; ARGV[3] "1" when these positions
--          complete a rebuild (clears "rebuilding" in the same step); then pairs: partition, offset
-- Returns  1, or 0 when the epoch differs (Redis lost the projection: the caller must rebuild).
if redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[1] then return 0 end
for i = 4, #ARGV, 2 do
  local current = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '-1')
  if tonumber(ARGV[i + 1]) > current then redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
local newest = tonumber(redis.call('HGET', KEYS[1], 'accepted_at') or '0')
if tonumber(ARGV[2]) > newest then redis.call('HSET', KEYS[1], 'accepted_at', ARGV[2]) end
if ARGV[3] == '1' then redis.call('HDEL', KEYS[1], 'rebuilding') end
return 1
