"""A processor round with copies of one award accepted in two regions, and a dedupe memory that
forgets by stream time: whatever order the copies arrive in, every region ends with the same totals,
tie keys, audit row and reconciliation; a source that lags holds the memory back."""

from __future__ import annotations

import itertools

from aiokafka import ConsumerRecord

from regions.core.forgetting import forget_before, should_forget
from regions.processor.round import Round, Source
from regions.runtime.settings import KafkaSettings
from regions.stores.task_state import MemoryStore
from schema.event_id import event_id, payload_digest
from schema.records import (
    COMPLETE_KEY,
    HEARTBEAT_KEY,
    AwardEvent,
    Codec,
    Heartbeat,
    PlayerTotal,
    dedupe_key,
    totals_key,
)
from schema.replication import SOURCE_OFFSET_HEADER

CODEC = Codec()
KAFKA = KafkaSettings(topic_prefix="t")
SOURCES = {
    "eu": Source("t.awards.v1", "eu", replicated=False),
    "us": Source("t.awards.from-us.v1", "us", replicated=True),
}
HORIZON = 60_000
MARGIN = 60_000


def _award(user: str, match: str, amount: int, region: str, at_ms: int, *, aggregation: str = "SUM",
           tie_policy: str = "FIRST_REACHED", metadata: str = "") -> tuple[str, bytes, bytes]:  # fmt: skip
    event = AwardEvent(
        event_id=event_id("b", match, user, "kill"), digest=payload_digest(amount, None, metadata), board_id="b",
        match_id=match, user_id=user, award_type="kill", amount=amount, occurred_at_ms=None, region=region,
        accepted_at_ms=at_ms, aggregation=aggregation, sort_order="DESC", tie_policy=tie_policy,
        metadata=metadata,
    )  # fmt: skip
    return region, totals_key("b", user), CODEC.encode(event)


def _heartbeat(region: str, at_ms: int) -> tuple[str, bytes, bytes]:
    return region, HEARTBEAT_KEY, CODEC.encode(Heartbeat(region=region, at_ms=at_ms))


class Task:
    """One task's store and the offsets of each source, fed one round at a time."""

    def __init__(self) -> None:
        self.store = MemoryStore()
        self.offsets = dict.fromkeys(SOURCES, 0)
        self.out: list[tuple[str, bytes, bytes | None]] = []

    def round(self, records: list[tuple[str, bytes, bytes]], *, forget_before: int | None = None) -> Round:
        fold = Round(KAFKA, CODEC, self.store, 0, HORIZON)
        if forget_before is not None:
            fold.forget(self.store.oldest_seen(forget_before, 1000), forget_before)
        for region, key, value in records:
            source, offset = SOURCES[region], self.offsets[region]
            self.offsets[region] += 1
            headers = [(SOURCE_OFFSET_HEADER, str(offset).encode())] if source.replicated else []
            fold.add(source, ConsumerRecord(source.topic, 0, offset, 0, 0, key, value, None, 0, 0, headers))
        self.out += fold.out + fold.watermarks()
        self.store.write(fold.store_batch({}))
        return fold

    def standings(self) -> list[tuple[str, int, str]]:
        players = {}
        for topic, _, value in self.out:
            if topic == "t.totals.v1" and value is not None:
                record = CODEC.totals(value)
                if isinstance(record, PlayerTotal):
                    players[record.user_id] = (record.user_id, record.total, record.reached)
        return sorted(players.values(), key=lambda p: (-p[1], p[2], p[0]))

    def reconciled(self) -> list[tuple[str, str, str, int]]:
        found = []
        for topic, _, value in self.out:
            if topic == "t.reconciliation.v1" and value is not None:
                r = CODEC.reconciliation(value)
                assert r.award is not None
                found.append((r.reason, r.award.user_id, r.award.region, r.award.amount))
        return sorted(found)

    def audited(self) -> dict[str, tuple[str, int]]:
        rows = {}
        for topic, _, value in self.out:
            if topic == "t.applied.v1" and value is not None:
                a = CODEC.applied(value).award
                rows[a.event_id] = (a.region, a.amount)
        return rows


# The failover scenario: alice's award times out in eu and is retried in us; carol's retry differs.
SCENARIO = [
    _award("alice", "m1", 10, "eu", 1_000),
    _award("bob", "m2", 10, "eu", 2_000),
    _award("alice", "m1", 10, "us", 3_000),
    _award("carol", "m3", 20, "eu", 4_000),
    _award("carol", "m3", 30, "us", 4_500),
]


def test_a_failover_retry_resolves_to_the_same_standings_in_every_arrival_order() -> None:
    results = set()
    for order in itertools.permutations(SCENARIO):
        if [r for r in order if r[0] == "eu"] != [r for r in SCENARIO if r[0] == "eu"]:
            continue  # one region's records keep their order in its stream
        if [r for r in order if r[0] == "us"] != [r for r in SCENARIO if r[0] == "us"]:
            continue
        task = Task()
        for record in order:
            task.round([record])
        results.add(
            (tuple(task.standings()), tuple(task.reconciled()), tuple(sorted(task.audited().items())))
        )
    assert len(results) == 1
    standings, reconciled, audited = results.pop()
    assert [(user, total) for user, total, _ in standings] == [("carol", 20), ("alice", 10), ("bob", 10)]
    assert reconciled == (("conflicting_repeat", "carol", "us", 30),)
    assert {region for region, _ in dict(audited).values()} == {"eu"}  # every audit row is the eu copy


def test_the_eu_copy_applied_after_the_us_copy_replaces_it() -> None:
    us_first = Task()
    us_first.round([SCENARIO[4]])
    us_first.round([SCENARIO[3]])
    assert us_first.standings()[0][:2] == ("carol", 20)
    assert us_first.reconciled() == [("conflicting_repeat", "carol", "us", 30)]


def _memory_positions(task: Task, eu_at: int, us_at: int) -> None:
    task.round([_heartbeat("eu", eu_at), _heartbeat("us", us_at)])


def test_forgetting_writes_tombstones_and_its_bound_to_the_changelog() -> None:
    task = Task()
    task.round([_award("ann", "m1", 5, "eu", 1_000), _award("ann", "m2", 5, "eu", 500_000)])
    fold = task.round([], forget_before=100_000)
    dedupe = [(key, value) for topic, key, value in fold.out if topic == "t.dedupe.v1"]
    assert (dedupe_key(event_id("b", "m1", "ann", "kill")), None) in dedupe
    # The bound: just after the newest copy forgotten (every later copy is still remembered).
    assert (COMPLETE_KEY, (1_001).to_bytes(8, "big", signed=True)) in dedupe
    assert task.store.seen(event_id("b", "m1", "ann", "kill")) is None
    assert task.store.seen(event_id("b", "m2", "ann", "kill")) is not None
    assert task.store.complete_since_ms() == 1_001
    nothing = task.round([], forget_before=200_000)  # nothing old enough: no record, no new bound
    assert [key for topic, key, _ in nothing.out if topic == "t.dedupe.v1"] == []


def _forget_as_the_loop_does(task: Task, records: list[tuple[str, bytes, bytes]]) -> Round:
    before = forget_before(task.store.sources(), SOURCES, HORIZON + MARGIN)
    return task.round(records, forget_before=before if should_forget(before, task.store.complete_since_ms(), 1)
                      else None)  # fmt: skip


def test_a_copy_arriving_after_a_long_cut_counts_once_and_is_never_refused() -> None:
    # us's copy of alice's award, and a new award of dave's, are held back far longer than the
    # horizon and its margin while eu's stream moves on: eu reads them at last.
    task = Task()
    _forget_as_the_loop_does(task, [_award("alice", "m1", 10, "eu", 1_000), _heartbeat("us", 900)])
    for at in range(100_000, 10_000_000, 1_000_000):
        _forget_as_the_loop_does(task, [_heartbeat("eu", at)])
    assert task.store.seen(event_id("b", "m1", "alice", "kill")) is not None  # us holds the memory back
    _forget_as_the_loop_does(
        task, [_award("alice", "m1", 10, "us", 2_000), _award("dave", "m9", 7, "us", 2_500)]
    )
    assert [(u, t) for u, t, _ in task.standings()] == [("alice", 10), ("dave", 7)]
    assert task.reconciled() == []
    _forget_as_the_loop_does(task, [_heartbeat("us", 10_000_000)])  # us caught up: now it may forget
    _forget_as_the_loop_does(task, [])
    assert task.store.seen(event_id("b", "m1", "alice", "kill")) is None
    assert task.store.complete_since_ms() == 2_501  # dave's award, the newest forgotten, + 1


def test_a_true_repeat_within_the_horizon_still_counts_once_after_forgetting() -> None:
    task = Task()
    _forget_as_the_loop_does(task, [_award("ann", "m1", 5, "eu", 1_000), _heartbeat("us", 1_000)])
    _forget_as_the_loop_does(task, [_heartbeat("eu", 500_000), _heartbeat("us", 500_000)])
    _forget_as_the_loop_does(
        task, [_award("ann", "m2", 5, "eu", 500_001), _award("ann", "m2", 5, "us", 500_002)]
    )
    assert [(u, t) for u, t, _ in task.standings()] == [("ann", 10)]


def test_the_totals_carry_the_metadata_of_the_winning_copy_that_holds_the_best_in_either_order() -> None:
    """MAX: region us applied its later copy of m1 (the best) first; the earlier copy from eu wins with
    less, so the best is m2's again: every region's totals end with m2's metadata, restored alike."""
    best = _award("ann", "m1", 90, "us", 2_000, aggregation="MAX", metadata='{"copy":"us"}')
    winner = _award("ann", "m1", 10, "eu", 1_000, aggregation="MAX", metadata='{"copy":"eu"}')
    other = _award("ann", "m2", 50, "eu", 1_500, aggregation="MAX", metadata='{"m":2}')
    shown = []
    for order in ([other, best, winner], [winner, other, best]):
        task = Task()
        for record in order:
            task.round([record])
        totals = [CODEC.totals(v) for t, _, v in task.out if t == "t.totals.v1" and v is not None]
        last = [r for r in totals if isinstance(r, PlayerTotal)][-1]
        state = task.store.player(("b", "ann"))
        assert state is not None and (state.total, state.metadata) == (last.total, last.metadata)
        shown.append((last.total, last.metadata))
    assert shown == [(50, '{"m":2}'), (50, '{"m":2}')]
