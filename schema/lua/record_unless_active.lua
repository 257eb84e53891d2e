-- Records a rebuild request (a hash, replaced as a whole) unless the one recorded is still active.
-- KEYS[1]  the rebuild request hash
-- ARGV[1]  the 'state' of a request that is no longer active; then field, value, field, value...
-- Returns  {} when recorded, else the recorded hash's fields and values (HGETALL).
local state = redis.call('HGET', KEYS[1], 'state')
if state and state ~= ARGV[1] then return redis.call('HGETALL', KEYS[1]) end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
return {}
