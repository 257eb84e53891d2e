-- Applies versioned absolute totals to one board's projection, atomically.
-- The only rule here is the one that must be atomic: a total is applied only when its version is
-- newer than the recorded one, together with that record. Rank order is decided by the caller's
-- encoding of score and member.
--
-- KEYS[1]  sorted set: member -> score (ascending order is rank order)
-- KEYS[2]  hash: userId -> "version|total|member"
-- KEYS[3]  the board's hint sequence (incremented when anything was applied); absent for a
--          rebuild's fresh keys, whose writes are not news for subscribers
-- ARGV     groups of 5: userId, version, total, score, member; an empty member removes the player
--          from the ranking (its record keeps the version: "version||", read as no score)
-- Returns  {sequence or 0, userId of each applied total...}
local zkey, rkey = KEYS[1], KEYS[2]
local result = {0}
for i = 1, #ARGV, 5 do
  local user, version = ARGV[i], tonumber(ARGV[i + 1])
  local member = ARGV[i + 4]
  local current = redis.call('HGET', rkey, user)
  local newer = true
  if current then
    local bar = string.find(current, '|', 1, true)
    newer = version > tonumber(string.sub(current, 1, bar - 1))
    if newer then
      local rest = string.sub(current, bar + 1)
      local old_member = string.sub(rest, string.find(rest, '|', 1, true) + 1)
      if old_member ~= member then redis.call('ZREM', zkey, old_member) end
    end
  end
  if newer then
    if member ~= '' then
      redis.call('ZADD', zkey, ARGV[i + 3], member)
      redis.call('HSET', rkey, user, ARGV[i + 1] .. '|' .. ARGV[i + 2] .. '|' .. member)
    else
      redis.call('HSET', rkey, user, ARGV[i + 1] .. '||')
    end
    result[#result + 1] = user
  end
end
if #result > 1 and KEYS[3] then result[1] = redis.call('INCR', KEYS[3]) end
return result
