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
-- and two forms of many players, answered on their own (no window):
--   'players', userId...           each player's {rank0, member, score, version, above, metadata}
--                                  (above: the entries with a strictly better score), or {-1} for
--                                  no score
--   'counts', score, member, ...   for each (score, member) not in this shard {better, above}: the
--                                  entries ranked better, and with a strictly better score
--   both reply {'ok', count, ...} (count: the shard's size)
-- and one form of samples, answered as a window whose rows are not contiguous:
--   'at', index...                 the entries at the 0-based indices given (ascending, at most
--                                  1000), without version or metadata: {'ok', -1, 0, count, 0,
--                                  member, score, false, false, ...} for the indices in the shard
--   'after', score, member, count  the count entries ranked after the position (score, member),
--                                  whoever holds it now (rank0: the entries ranked before them)
--   'before', score, member, count the count entries ranked nearest before the position (rank0:
--                                  the entries ranked before it): keyset pages of one shard
--   'from', score, member, count   the count entries ranked at or after the position (rank0: the
--                                  entries ranked before it)
--   'bottom', count                the worst count (rank0: the shard's size)
-- Returns {'moved'} when the layout is not live (swapped out: read the board's layout again; or,
-- when the board's layout is still this one, the shard lost its keys);
-- {'none'} when the player has no score; else {'ok', rank0, first0, count, above, member, score,
-- version, metadata, ...} in rank order (rank0: the player's 0-based rank, -1 for top and slice, the
-- count of better entries for around; above: the count of entries with a strictly better score than
-- the window's lead, its first row, or for around the entry placed when no row of the window
-- precedes it: what shared ranks start from; metadata: false when none, from the player's metadata
-- bucket: the version buckets' prefix, 'm', the same 4 hex digits). A malformed call is an error,
-- never a read of the whole board.
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

local function member_of(user)  -- the player's member, or nil when it has no score
  local rec = record_of(user)
  if not rec then return nil end
  local bar = string.find(rec, '|', 1, true)
  if bar == #rec then return nil end  -- "version|": the player left the ranking
  return bar and (string.sub(rec, bar + 1) .. '|' .. user) or user, string.match(rec, '^[^|]*')
end

local function above_of(score) return redis.call('ZCOUNT', zkey, '-inf', '(' .. score) end

if form == 'players' or form == 'counts' then
  local out = {'ok', redis.call('ZCARD', zkey)}
  if form == 'players' then
    for i = 4, #ARGV do
      local member, version = member_of(ARGV[i])
      local rank = member and redis.call('ZRANK', zkey, member)
      if rank then
        local score = redis.call('ZSCORE', zkey, member)
        local note = redis.call('HGET', buckets .. 'm' .. string.sub(redis.sha1hex(ARGV[i]), 1, 4), ARGV[i]) or false
        for _, v in ipairs({rank, member, score, version, above_of(score), note}) do out[#out + 1] = v end
      else
        out[#out + 1] = -1
      end
    end
  else
    if #ARGV % 2 ~= 1 then return redis.error_reply('read_window: counts needs (score, member) pairs') end
    for i = 4, #ARGV, 2 do
      if not tonumber(ARGV[i]) then return redis.error_reply('read_window: counts needs scores') end
      out[#out + 1] = better(ARGV[i], ARGV[i + 1])
      out[#out + 1] = above_of(ARGV[i])
    end
  end
  return out
end

if form == 'at' then
  if #ARGV > 1003 then return redis.error_reply('read_window: at takes at most 1000 indices') end
  local out = {'ok', -1, 0, redis.call('ZCARD', zkey), 0}
  for i = 4, #ARGV do
    local at = tonumber(ARGV[i])
    if not at or at < 0 then return redis.error_reply('read_window: at needs indices >= 0') end
    local row = redis.call('ZRANGE', zkey, at, at, 'WITHSCORES')
    if row[1] then
      for _, v in ipairs({row[1], row[2], false, false}) do out[#out + 1] = v end
    end
  end
  return out
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
  local member = member_of(user)
  rank = member and redis.call('ZRANK', zkey, member)
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
elseif form == 'after' or form == 'before' or form == 'from' then
  local score, member, n = ARGV[4], ARGV[5], tonumber(ARGV[6])
  if not tonumber(score) or not member then return redis.error_reply('read_window: ' .. form .. ' needs a score and a member') end
  if not n or n < 1 or n > 100000 then return redis.error_reply('read_window: ' .. form .. ' needs 1 <= count <= 100000') end
  rank = better(score, member)
  if form ~= 'before' then lead = score end  -- 'above' counts from the position's score
  if form == 'before' then
    first, last = math.max(0, rank - n), rank - 1
  elseif form == 'from' then
    first, last = rank, rank + n - 1
  else
    local at = redis.call('ZRANGE', zkey, rank, rank, 'WITHSCORES')  -- the position's own entry
    if at[1] == member and tonumber(at[2]) == tonumber(score) then rank = rank + 1 end
    first, last = rank, rank + n - 1
  end
elseif form == 'bottom' then
  local n = tonumber(ARGV[4])
  if not n or n < 1 or n > 100000 then return redis.error_reply('read_window: bottom needs 1 <= count <= 100000') end
  rank = redis.call('ZCARD', zkey)
  first, last = math.max(0, rank - n), rank - 1
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
  local user = string.sub(rows[i], strip + 1)
  local digits = string.sub(redis.sha1hex(user), 1, 4)
  local rec = redis.call('HGET', buckets .. digits, user)
  out[#out + 1] = rows[i]
  out[#out + 1] = rows[i + 1]
  out[#out + 1] = rec and string.match(rec, '^[^|]*') or false
  out[#out + 1] = redis.call('HGET', buckets .. 'm' .. digits, user) or false
end
return out
