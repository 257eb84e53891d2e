-- One atomic read of a rank window, in one of two explicit forms:
--   ARGV = {'top', k, strip}                the best k (k >= 1)
--   ARGV = {'player', userId, range, strip} the player (non-empty id) with range neighbours each side
--   ARGV = {'slice', first0, count, strip}   ranks first0+1 .. first0+count (1 <= count <= 100000)
-- KEYS[1] sorted set; KEYS[2] records hash (userId -> "version|total|member")
-- strip: length of the member prefix before the userId (0, or the tie prefix with its '|')
-- Returns false when the player has no score; else {rank0, first0, count, member, record, ...}
-- (rank0 is -1 for a top read). A malformed call is an error, never a read of the whole board.
local zkey, rkey = KEYS[1], KEYS[2]
local form = ARGV[1]
local rank, first, last, strip
if form == 'top' then
  local k = tonumber(ARGV[2])
  if not k or k < 1 then return redis.error_reply('read_window: top needs k >= 1') end
  rank, first, last, strip = -1, 0, k - 1, tonumber(ARGV[3])
elseif form == 'player' then
  local user, n = ARGV[2], tonumber(ARGV[3])
  if not user or user == '' then return redis.error_reply('read_window: player needs a userId') end
  if not n or n < 0 then return redis.error_reply('read_window: player needs range >= 0') end
  local rec = redis.call('HGET', rkey, user)
  if not rec then return false end
  local rest = string.sub(rec, string.find(rec, '|', 1, true) + 1)
  rank = redis.call('ZRANK', zkey, string.sub(rest, string.find(rest, '|', 1, true) + 1))
  if not rank then return false end
  first, last, strip = math.max(0, rank - n), rank + n, tonumber(ARGV[4])
elseif form == 'slice' then
  local from, n = tonumber(ARGV[2]), tonumber(ARGV[3])
  if not from or from < 0 then return redis.error_reply('read_window: slice needs first0 >= 0') end
  if not n or n < 1 or n > 100000 then return redis.error_reply('read_window: slice needs 1 <= count <= 100000') end
  rank, first, last, strip = -1, from, from + n - 1, tonumber(ARGV[4])
else
  return redis.error_reply('read_window: unknown form ' .. tostring(form))
end
local out = {rank, first, redis.call('ZCARD', zkey)}
for _, member in ipairs(redis.call('ZRANGE', zkey, first, last)) do
  out[#out + 1] = member
  out[#out + 1] = redis.call('HGET', rkey, string.sub(member, strip + 1))
end
return out
