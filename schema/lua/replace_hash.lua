-- Replaces a hash as a whole, atomically: a reader sees the old fields or the new ones, never a mix.
-- (A script rather than MULTI: the same call works on one server and on a Redis Cluster.)
-- KEYS[1]  the hash
-- ARGV     field, value, field, value...
redis.call('DEL', KEYS[1])
if #ARGV > 0 then redis.call('HSET', KEYS[1], unpack(ARGV)) end
return 1
