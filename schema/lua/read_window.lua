-- One atomic read of a rank window of one shard of a board.
-- KEYS[1] sorted set; KEYS[2] the state of this shard's layout generation (read only while 'live')
-- ARGV[1] prefix of the shard's version buckets (+ the first 4 hex digits of SHA-1(userId));
-- ARGV[2] strip: length of the member prefix before the userId (0, or the tie prefix with its '|');
-- then one of these forms:
--   'top', k                       the best k (k >= 1)
--   'player', userId, range        the player (non-empty id) with range neighbours each side
--   'slice', first0, count         ranks first0+1 .. first0+count (1 <= count <= 100000)
--   'around', score, member, range where an entry (score, member) that is not in this shard would
--                                  rank here (the number of entries ranked better), with range
--                                  neighbours each side: how one shard of a sharded board counts
--                                  and shows what is around a player of another shard
-- Returns {'moved'} when the layout is not live (swapped out: read the board's layout again; or,
-- when the board's layout is still this one, the shard lost its keys);
-- {'none'} when the player has no score; else {'ok', rank0, first0, count, above, member, score,
-- version, ...} in rank order (rank0: the player's 0-based rank, -1 for top and slice, the count of
-- better entries for around; above: the count of entries with a strictly better score than the
-- window's lead, its first row, or for around the entry placed when no row of the window precedes
-- it: what shared ranks start from). A malformed call is an error, never a read of the whole board.
local zkey = KEYS[1]
if redis.call('GET', KEYS[2]) ~= 'live' then return {'moved'} end
local buckets, strip, form = ARGV[1], tonumber(ARGV[2]), ARGV[3]

local function record_of(user)  -- the player's version record (the bucket is a key of this slot)
  return redis.call('HGET', buckets .. string.sub(redis.sha1hex(user), 1, 4), user)
end

local function before(a, b)  -- whether member a sorts before b as Redis sorts equal scores (bytes)
  if a == b then return false end  -- (Lua's '<' on strings follows the locale, not the bytes)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

local function better(score, member)  -- entries ranked before (score, member): O(log n) steps
  local lo = redis.call('ZCOUNT', zkey, '-inf', '(' .. score)
  local hi = redis.call('ZCOUNT', zkey, '-inf', score)
  while lo < hi do  -- binary search by index among the entries of equal score
    local mid = math.floor((lo + hi) / 2)
    if before(redis.call('ZRANGE', zkey, mid, mid)[1], member) then lo = mid + 1 else hi = mid end
  end
  return lo
end

local rank, first, last, lead  -- lead: a form's own score for 'above' (else the first row's)
if form == 'top' then
  local k = tonumber(ARGV[4])
  if not k or k < 1 then return redis.error_reply('read_window: top needs k >= 1') end
  rank, first, last = -1, 0, k - 1
elseif form == 'player' then
  local user, n = ARGV[4], tonumber(ARGV[5])
  if not user or user == '' then return redis.error_reply('read_window: player needs a userId') end
  if not n or n < 0 then return redis.error_reply('read_window: player needs range >= 0') end
  local rec = record_of(user)
  if not rec then return {'none'} end
  local bar = string.find(rec, '|', 1, true)
  if bar == #rec then return {'none'} end  -- "version|": the player left the ranking
  rank = redis.call('ZRANK', zkey, bar and (string.sub(rec, bar + 1) .. '|' .. user) or user)
  if not rank then return {'none'} end
  first, last = math.max(0, rank - n), rank + n
elseif form == 'slice' then
  local from, n = tonumber(ARGV[4]), tonumber(ARGV[5])
  if not from or from < 0 then return redis.error_reply('read_window: slice needs first0 >= 0') end
  if not n or n < 1 or n > 100000 then return redis.error_reply('read_window: slice needs 1 <= count <= 100000') end
  rank, first, last = -1, from, from + n - 1
elseif form == 'around' then
  local score, member, n = ARGV[4], ARGV[5], tonumber(ARGV[6])
  if not tonumber(score) or not member then return redis.error_reply('read_window: around needs a score and a member') end
  if not n or n < 0 then return redis.error_reply('read_window: around needs range >= 0') end
  rank = better(score, member)
  first, last = math.max(0, rank - n), rank + n - 1
  if first == rank then lead = score end
else
  return redis.error_reply('read_window: unknown form ' .. tostring(form))
end
-- Entries strictly better than the lead: all before the window, unless the one just before ties
-- the lead (the window starts inside a tie): then a count by score (O(log n)).
local above = first
if first > 0 then
  local edge = redis.call('ZRANGE', zkey, first - 1, first, 'WITHSCORES')
  local score = lead or edge[4]
  if score and tonumber(edge[2]) == tonumber(score) then
    above = redis.call('ZCOUNT', zkey, '-inf', '(' .. score)
  end
end
local out = {'ok', rank, first, redis.call('ZCARD', zkey), above}
if last < first then return out end
local rows = redis.call('ZRANGE', zkey, first, last, 'WITHSCORES')
for i = 1, #rows, 2 do
  local rec = record_of(string.sub(rows[i], strip + 1))
  out[#out + 1] = rows[i]
  out[#out + 1] = rows[i + 1]
  out[#out + 1] = rec and string.match(rec, '^[^|]*') or false
end
return out
