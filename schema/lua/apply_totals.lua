-- Applies versioned absolute totals to one board's projection, atomically.
-- The only rule here is the one that must be atomic: a total is applied only when its version is
-- newer than the recorded one, together with that record. Ordering is decided by the caller's
-- encoding of score and member.
--
-- KEYS[1]  sorted set: member -> score (ascending order is rank order)
-- KEYS[2]  hash: userId -> "version|total|member"
-- ARGV     groups of 5: userId, version, total, score, member
-- Returns  the number of totals applied (older or equal versions are skipped).
local zkey, rkey = KEYS[1], KEYS[2]
local applied = 0
for i = 1, #ARGV, 5 do
  local user, version = ARGV[i], tonumber(ARGV[i + 1])
  local member = ARGV[i + 4]
  local current = redis.call('HGET', rkey, user)
  local newer = true
  if current then
    local bar = string.find(current, '|', 1, true)
    local current_version = tonumber(string.sub(current, 1, bar - 1))
    newer = version > current_version
    if newer then
      local rest = string.sub(current, bar + 1)
      local old_member = string.sub(rest, string.find(rest, '|', 1, true) + 1)
      if old_member ~= member then redis.call('ZREM', zkey, old_member) end
    end
  end
  if newer then
    redis.call('ZADD', zkey, ARGV[i + 3], member)
    redis.call('HSET', rkey, user, ARGV[i + 1] .. '|' .. ARGV[i + 2] .. '|' .. member)
    applied = applied + 1
  end
end
return applied
