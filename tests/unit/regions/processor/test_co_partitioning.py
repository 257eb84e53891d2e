"""The processor's group assignment gives partition p of every source topic to one member."""

from __future__ import annotations

from collections import defaultdict

from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata
from hypothesis import given
from hypothesis import strategies as st

from regions.stores.kafka.clients import assignment_strategy


class _Cluster:
    def __init__(self, partitions: dict[str, int]) -> None:
        self._partitions = partitions

    def partitions_for_topic(self, topic: str) -> set[int]:
        return set(range(self._partitions[topic]))


def _assign(topics: list[str], partitions: int, members: int) -> dict[str, dict[str, list[int]]]:
    (assignor,) = assignment_strategy(co_partitioned=True)
    subscription = {
        f"member-{i}": ConsumerProtocolMemberMetadata(0, sorted(topics), b"") for i in range(members)
    }
    result = assignor.assign(_Cluster(dict.fromkeys(topics, partitions)), subscription)
    found: dict[str, dict[str, list[int]]] = defaultdict(dict)
    for member, assignment in result.items():
        for topic, owned in assignment.assignment:
            found[member][topic] = sorted(owned)
    return found


@given(st.integers(1, 4), st.integers(1, 24), st.integers(1, 8))
def test_every_member_owns_the_same_partitions_of_every_source(
    sources: int, partitions: int, members: int
) -> None:
    topics = ["lb.awards.v1"] + [f"lb.awards.from-r{i}.v1" for i in range(1, sources)]
    assignment = _assign(topics, partitions, members)
    owners: dict[int, set[str]] = defaultdict(set)
    for member, by_topic in assignment.items():
        numbers = {tuple(owned) for owned in by_topic.values()}
        assert len(numbers) == 1, f"{member} owns different partitions per topic: {by_topic}"
        assert set(by_topic) == set(topics)
        for p in next(iter(numbers)):
            owners[p].add(member)
    assert {p: len(m) for p, m in owners.items()} == dict.fromkeys(range(partitions), 1)


def test_other_consumers_keep_round_robin() -> None:
    assert [a.name for a in assignment_strategy(co_partitioned=False)] == ["roundrobin"]
