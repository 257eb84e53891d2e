-- Takes, extends or releases the projection's write lease, if it is free or already the caller's.
-- KEYS[1]  the lease: holder name, with a time to live
-- ARGV[1]  the caller's holder name; ARGV[2] time to live in ms, or 0 to release
-- Returns  1 when the caller holds the lease (or released it), 0 when someone else holds it.
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
if ARGV[2] == '0' then
  if holder then redis.call('DEL', KEYS[1]) end
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return 1
