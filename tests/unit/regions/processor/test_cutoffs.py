"""A processor round meets a board's cutoff marker: the first marker is the cutoff, later awards of
that board from that region are late (reconciled, never applied), other boards and regions go on."""

from __future__ import annotations

from aiokafka import ConsumerRecord

from regions.processor.round import Round, Source
from regions.runtime.settings import KafkaSettings
from regions.stores.task_state import MemoryStore
from schema.event_id import event_id, payload_digest
from schema.lifecycle import CutoffMarker, CutoffReached, LifecycleCodec, cutoff_marker_key
from schema.records import AwardEvent, Codec, totals_key

CODEC, LIFECYCLE = Codec(), LifecycleCodec()
KAFKA = KafkaSettings(topic_prefix="t")
EU = Source("t.awards.v1", "eu", replicated=False)


def _award(board: str, match: str, amount: int = 5) -> tuple[bytes, bytes]:
    event = AwardEvent(
        event_id=event_id(board, match, "ann", "kill"), digest=payload_digest(amount, None), board_id=board,
        match_id=match, user_id="ann", award_type="kill", amount=amount, occurred_at_ms=None, region="eu",
        accepted_at_ms=1_000, aggregation="SUM", sort_order="DESC", tie_policy="USER_ID",
    )  # fmt: skip
    return (totals_key(board, "ann"), CODEC.encode(event))


def _marker(board: str) -> tuple[bytes, bytes]:
    marker = CutoffMarker(board_id=board, region="eu", closing_at_ms=1, written_at_ms=2)
    return (cutoff_marker_key(board), LIFECYCLE.encode(marker))


def _fold(
    store: MemoryStore, records: list[tuple[bytes, bytes]], first_offset: int = 0, *, honour: bool = True
) -> Round:
    fold = Round(KAFKA, CODEC, store, 0, 86_400_000, honour_cutoffs=honour)
    for i, (key, value) in enumerate(records):
        fold.add(EU, ConsumerRecord(EU.topic, 0, first_offset + i, 0, 0, key, value, None, 0, 0, []))
    store.write(fold.store_batch({}))
    return fold


def _out(fold: Round, topic: str) -> list[bytes]:
    return [value for t, _, value in fold.out if t == topic]


def test_awards_after_the_first_marker_are_late_and_the_cutoff_survives_the_round() -> None:
    store = MemoryStore()
    fold = _fold(store, [_award("b", "m1"), _marker("b"), _award("b", "m2"), _marker("b"), _award("c", "m3")])
    reached = [v for v in _out(fold, "t.totals.v1") if CODEC.totals(v).__class__ is CutoffReached]
    assert [CODEC.totals(v) for v in reached] == [
        CutoffReached(board_id="b", region="eu", source_partition=0, source_offset=1)
    ]
    late = [CODEC.reconciliation(v) for v in _out(fold, "t.reconciliation.v1")]
    assert [(r.reason, r.award.match_id if r.award else None) for r in late] == [("late", "m2")]
    assert store.player(("b", "ann")) is not None and store.player(("b", "ann")).total == 5  # type: ignore[union-attr]
    assert store.player(("c", "ann")) is not None  # another board is not closing
    later = _fold(store, [_award("b", "m4")], first_offset=10)  # a later round: the store holds the cutoff
    assert [CODEC.reconciliation(v).reason for v in _out(later, "t.reconciliation.v1")] == ["late"]


def test_without_the_barrier_late_awards_are_applied() -> None:
    store = MemoryStore()
    _fold(store, [_marker("b"), _award("b", "m1")], honour=False)
    assert store.player(("b", "ann")) is not None
