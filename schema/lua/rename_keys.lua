-- Renames keys in one step (they share a hash tag): a rebuild's fresh keys replace the live ones.
-- KEYS     pairs: from, to, from, to...
-- Returns  1
for i = 1, #KEYS, 2 do redis.call('RENAME', KEYS[i], KEYS[i + 1]) end
return 1
