"""Rounds of an approximate board: awards counted in the partition's sketch, candidates written as
estimated totals with their list's version, evicted ones as tombstones, the partition's total on
the companion board; a restore from the changelog records rebuilds the same counters and list."""

from __future__ import annotations

from aiokafka import ConsumerRecord

from regions.processor.restore import _Loader
from regions.processor.round import Round, Source
from regions.stores.task_state import MemoryStore, StoreBatch
from schema.event_id import event_id, payload_digest
from schema.records import AwardEvent, totals_key
from tests.unit.regions.processor.rounds import CODEC, EU, US, Record, Streams, totals_of

TOTALS = "t.totals.v1"


def play(source: Source, match: str, item: str, amount: int = 1, board: str = "tr") -> Record:
    event = AwardEvent(
        event_id=event_id(board, match, item, "play"), digest=payload_digest(amount, None), board_id=board,
        match_id=match, user_id=item, award_type="play", amount=amount, occurred_at_ms=None,
        region=source.region, accepted_at_ms=1_000, aggregation="SUM", sort_order="DESC",
        tie_policy="USER_ID", approximate="2,0.01,0.01",
    )  # fmt: skip
    return (source, totals_key(board, item), CODEC.encode(event))


def test_candidates_are_the_best_estimates_with_the_lists_version() -> None:
    streams = Streams()
    fold = streams.fold([play(EU, f"m{i}", f"song{i % 7}") for i in range(50)] + [play(US, "m1", "song1")])
    assert fold.counts["applied"] == 50 and fold.counts["duplicate"] == 1  # the copy from us counts once
    sent = {(t.board_id, t.user_id): (t.total, t.version, t.estimated) for t in totals_of(fold)}
    assert sent == {("tr", "song0"): (8, 1, True), ("tr", "song1"): (7, 1, True), ("tr", "song2"): (7, 1, True),
                    ("tr", "song3"): (7, 1, True), ("tr#counts", "p0"): (50, 1, True)}  # fmt: skip
    assert streams.store.candidates("tr").version == 1 and streams.store.candidates("tr").total == 50
    assert streams.store.player(("tr", "song0")) is None  # no player state for an item


def test_an_item_pushed_out_leaves_as_a_tombstone() -> None:
    streams = Streams()
    streams.fold([play(EU, f"a{i}", item, 3) for i, item in enumerate(["x", "y", "z", "w"])])
    fold = streams.fold([play(EU, "b", "v", 5)])
    gone = [key for topic, key, value in fold.out if topic == TOTALS and value is None]
    assert gone == [totals_key("tr", "z")]  # all at 3: the largest id ranks worst
    assert [t.version for t in totals_of(fold)] == [2, 2]  # v, and the partition's total


def test_a_restore_from_the_changelog_gives_the_same_counters() -> None:
    streams = Streams()
    rounds: list[Round] = [
        streams.fold([play(EU, f"r{r}m{i}", f"song{(i * 7 + r) % 23}", i % 4 + 1) for i in range(40)])
        for r in range(5)
    ]
    records = [
        ConsumerRecord(TOTALS, 0, n, 0, 0, key, value, None, 0, 0, [])
        for n, (topic, key, value) in enumerate(out for fold in rounds for out in fold.out)
        if topic == TOTALS
    ]
    restored, batch = MemoryStore(), StoreBatch()
    _Loader(restored, TOTALS)._totals_records(batch, records)
    restored.write(batch)
    assert restored._sketch == streams.store._sketch and restored._sketch
    assert restored.candidates("tr") == streams.store.candidates("tr")
    assert restored.players_count() == 0
