"""The intake's partitioner sends every key where aiokafka's default partitioner (Kafka's rule) does."""

from __future__ import annotations

from aiokafka.partitioner import DefaultPartitioner
from aiokafka.partitioner import murmur2 as reference_murmur2
from hypothesis import given
from hypothesis import strategies as st

from regions.stores.kafka.partitioner import KeyPartitioner, murmur2


@given(st.binary(max_size=300))
def test_murmur2_equals_the_reference_for_any_bytes(data: bytes) -> None:
    assert murmur2(data) == reference_murmur2(data)


@given(key=st.binary(min_size=0, max_size=200), partitions=st.integers(1, 64))
def test_a_key_goes_to_the_partition_the_default_partitioner_picks(key: bytes, partitions: int) -> None:
    every = list(range(partitions))
    assert KeyPartitioner()(key, every, every) == DefaultPartitioner()(key, every, every)


def test_award_keys_of_every_length_up_to_a_word_and_more() -> None:
    for key in [b"", b"a", b"ab", b"abc", b"abcd", b"board-1|alice", "b|j\u00fcrgen".encode()]:
        assert murmur2(key) == reference_murmur2(key)


def test_a_record_without_a_key_goes_to_an_available_partition() -> None:
    assert KeyPartitioner()(None, [0, 1, 2], [2]) == 2
    assert KeyPartitioner()(None, [0, 1, 2], []) in (0, 1, 2)
