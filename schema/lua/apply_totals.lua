-- Applies versioned absolute totals to one shard of a board's projection, atomically.
-- The only rule here is the one that must be atomic: a total is applied only when its version is
-- newer than the recorded one, together with that record. Rank order is decided by the caller's
-- encoding of score and member.
--
-- KEYS[1]  sorted set: member -> score (ascending order is rank order)
-- KEYS[2]  the state of this shard's layout generation: nothing is written unless it equals ARGV[1]
--          ('live' for the projector, 'building' for a rebuild's fresh keys), so a late write for a
--          layout that was swapped out (rebuild, reshard) is refused, never applied out of order,
--          and so is a write into a shard whose keys were lost (its Redis restarted empty)
-- KEYS[3..] version buckets (hashes) of the players below: userId -> version, or "version|reached"
--          when the member is "reached|userId" (FIRST_REACHED), or "version|" once the player left
--          the ranking (read as no score). The total is the score itself. Each version bucket is
--          followed by the player's metadata bucket (hash: userId -> metadata), which holds only
--          players with metadata: a newer version without any deletes the player's field.
-- ARGV[1]  the expected state; then groups of 6: userId, version, score, member, index in KEYS of
--          the player's version bucket (its metadata bucket is the next key), metadata (JSON text,
--          empty: none); an empty member removes the player from the ranking (a rolling window's
--          player with no points left), its record keeping the version; version -1 removes the
--          player and its records whatever version they hold (an erasure)
-- Returns  {1, userId of each applied total...}, or {0} when the layout is not in the expected state
local zkey = KEYS[1]
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return {0} end
local result = {1}
for i = 2, #ARGV, 6 do
  local user, version, member = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 3]
  local index = tonumber(ARGV[i + 4])
  local bucket = KEYS[index]
  local current = redis.call('HGET', bucket, user)
  local erase = version < 0
  local newer = not erase
  if current then
    local bar = string.find(current, '|', 1, true)
    newer = erase or version > tonumber(bar and string.sub(current, 1, bar - 1) or current)
    if newer then
      local reached = bar and string.sub(current, bar + 1)  -- nil: the member is the user id
      local old_member = (not bar and user) or (reached ~= '' and reached .. '|' .. user) or nil
      if old_member and old_member ~= member then redis.call('ZREM', zkey, old_member) end
    end
  end
  if newer and erase then
    redis.call('HDEL', bucket, user)
    redis.call('HDEL', KEYS[index + 1], user)
    result[#result + 1] = user
  elseif newer then
    local record = ARGV[i + 1]
    if member == '' then
      record = record .. '|'  -- removed: the version stays, no member
    else
      redis.call('ZADD', zkey, ARGV[i + 2], member)
      -- the member is the user id, or the reached key, '|', the user id
      if member ~= user then record = record .. '|' .. string.sub(member, 1, #member - #user - 1) end
    end
    redis.call('HSET', bucket, user, record)
    if ARGV[i + 5] ~= '' then
      redis.call('HSET', KEYS[index + 1], user, ARGV[i + 5])
    else
      redis.call('HDEL', KEYS[index + 1], user)
    end
    result[#result + 1] = user
  end
end
return result
