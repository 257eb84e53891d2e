"""Rounds of one processor task fed by hand: two accepting regions' streams (eu and us, each with
offsets of its own) folded into a store round by round, and the totals a round sends."""

from __future__ import annotations

from aiokafka import ConsumerRecord

from regions.processor.round import Round, Source
from regions.runtime.settings import KafkaSettings
from regions.stores.task_state import MemoryStore
from schema.records import Codec, PlayerTotal

CODEC = Codec()
KAFKA = KafkaSettings(topic_prefix="t")
EU = Source("t.awards.v1", "eu", replicated=False)
US = Source("t.awards.from-us.v1", "us", replicated=False)  # offsets as its own, for the test
Record = tuple[Source, bytes, bytes]


class Streams:
    """A task's store and the next offset of each source, folded round by round."""

    def __init__(self) -> None:
        self.store = MemoryStore()
        self.next = {EU.topic: 0, US.topic: 0}

    def fold(self, records: list[Record]) -> Round:
        fold = Round(KAFKA, CODEC, self.store, 0, 86_400_000)
        for source, key, value in records:
            offset = self.next[source.topic]
            self.next[source.topic] += 1
            fold.add(source, ConsumerRecord(source.topic, 0, offset, 0, 0, key, value, None, 0, 0, []))
        self.store.write(fold.store_batch({}))
        return fold


def totals_of(fold: Round) -> list[PlayerTotal]:
    """The player totals the round sends, in order."""
    return [
        v for t, _, raw in fold.out if t == "t.totals.v1" and isinstance(v := CODEC.totals(raw), PlayerTotal)
    ]
