-- One atomic read of a rank window: a player's rank with neighbours, or the top of the board.
-- KEYS[1]  sorted set; KEYS[2] records hash (userId -> "version|total|member")
-- ARGV[1]  userId, or '' for the top; ARGV[2] range around the player, or k for the top;
-- ARGV[3]  length of the member prefix before the userId (0, or the tie prefix with its '|')
-- Returns  false when the player has no score; else {rank0, first0, count, member, record, ...}
local zkey, rkey = KEYS[1], KEYS[2]
local n, strip = tonumber(ARGV[2]), tonumber(ARGV[3])
local rank, first, last = -1, 0, n - 1
if ARGV[1] ~= '' then
  local rec = redis.call('HGET', rkey, ARGV[1])
  if not rec then return false end
  local rest = string.sub(rec, string.find(rec, '|', 1, true) + 1)
  rank = redis.call('ZRANK', zkey, string.sub(rest, string.find(rest, '|', 1, true) + 1))
  if not rank then return false end
  first, last = math.max(0, rank - n), rank + n
end
local out = {rank, first, redis.call('ZCARD', zkey)}
for _, member in ipairs(redis.call('ZRANGE', zkey, first, last)) do
  out[#out + 1] = member
  out[#out + 1] = redis.call('HGET', rkey, string.sub(member, strip + 1))
end
return out
