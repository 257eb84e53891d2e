"""Rounds of one processor task fed by hand: two accepting regions' streams (eu and us, each with
offsets of its own) folded into a store round by round, and the totals a round sends."""

from __future__ import annotations

from aiokafka import ConsumerRecord

from regions.processor.round import Round, Source
from regions.runtime.settings import KafkaSettings
from regions.stores.task_state import MemoryStore
from schema.event_id import event_id, payload_digest
from schema.records import AwardEvent, Codec, PlayerTotal, totals_key

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
        v for t, _, raw in fold.out if t == "t.totals.v1" and raw and isinstance(v := CODEC.totals(raw), PlayerTotal)
    ]


def award(source: Source, match: str, amount: int, user: str = "ann", board: str = "b") -> Record:
    """A SUM award of ``amount`` for ``user`` on ``board``, accepted by ``source``'s region."""
    event = AwardEvent(
        event_id=event_id(board, match, user, "kill"), digest=payload_digest(amount, None), board_id=board,
        match_id=match, user_id=user, award_type="kill", amount=amount, occurred_at_ms=None,
        region=source.region, accepted_at_ms=1_000, aggregation="SUM", sort_order="DESC", tie_policy="USER_ID",
    )  # fmt: skip
    return (source, totals_key(board, user), CODEC.encode(event))
