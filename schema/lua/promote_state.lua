-- Moves one shard's layout state forward, only from the state it is expected to be in.
-- KEYS[1]  the state of one shard of a layout generation (see apply_totals.lua)
-- ARGV[1]  the state it must be in ('building'); ARGV[2] the state it takes ('live'), which it may
--          hold already (a swap resumed after it began)
-- Returns  1, or 0 when the state is neither: the shard's keys are gone (its Redis restarted empty),
--          so the layout must not turn live over them
local state = redis.call('GET', KEYS[1])
if state ~= ARGV[1] and state ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
