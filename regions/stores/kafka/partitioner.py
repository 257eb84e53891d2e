"""Which partition a keyed record goes to: Kafka's murmur2 rule, as every Kafka client computes it.

The same as aiokafka's ``DefaultPartitioner`` for every key (a test holds them equal), so records
keep landing where earlier ones with the same key did; computed on 4-byte words instead of byte
by byte, which makes it several times cheaper: the intake hashes one key per award.
"""

from __future__ import annotations

import random
import struct

_M = 0x5BD1E995
_SEED = 0x9747B28C
_WORDS = struct.Struct("<I").iter_unpack


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 of ``data`` (unsigned 32 bits, as aiokafka returns it)."""
    n = len(data)
    h = _SEED ^ n
    whole = n & ~3
    for (k,) in _WORDS(data[:whole]):
        k = (k * _M) & 0xFFFFFFFF
        k = ((k ^ (k >> 24)) * _M) & 0xFFFFFFFF
        h = ((h * _M) & 0xFFFFFFFF) ^ k
    if n & 3:
        h = ((h ^ int.from_bytes(data[whole:], "little")) * _M) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * _M) & 0xFFFFFFFF
    return h ^ (h >> 15)


class KeyPartitioner:
    """A drop-in for aiokafka's default partitioner: a key's partition is its murmur2 (positive)
    modulo the topic's partition count; a record without a key goes to any available partition."""

    def __call__(self, key: bytes | None, all_partitions: list[int], available: list[int]) -> int:
        if key is None:
            return random.choice(available or all_partitions)
        return all_partitions[(murmur2(key) & 0x7FFFFFFF) % len(all_partitions)]
