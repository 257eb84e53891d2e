"""Approximate boards' settings, copies of one award, and the candidate list with its exact counts:
a state machine against a reference model (the true count of each item is the sum of its winning
copies), and lists of two arrival orders compared."""

from __future__ import annotations

import random

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from regions.core.aggregation import DedupeMemory, Seen, copy_of, copy_order
from regions.core.approximate import (
    ApproximateSpec,
    InvalidApproximate,
    decode_approximate,
    encode_approximate,
)
from regions.core.boards import Aggregation, Board, InvalidBoardError, SortOrder, TiePolicy
from regions.core.candidates import (
    CandidateList,
    Candidates,
    Counted,
    changes,
    count_award,
    exact_note,
    noted_exact,
    ranked,
)
from regions.core.sketch import Shape, Sketch
from schema.records import AwardEvent
from schema.sketch import CandidateSet
from tests.unit.regions.core.strategies import award


def test_settings_round_trip_and_refusals_name_the_field() -> None:
    spec = ApproximateSpec(100, 0.001, 0.001)
    assert decode_approximate(encode_approximate(spec)) == spec and decode_approximate("") is None
    for args, field in (((0, 0.1, 0.1), "approximate.k"), ((1001, 0.1, 0.1), "approximate.k"),
                        ((5, 0.0, 0.1), "approximate.epsilon"), ((5, 0.2, 0.1), "approximate.epsilon"),
                        ((5, 0.1, 0.6), "approximate.delta")):  # fmt: skip
        with pytest.raises(InvalidApproximate, match=field):
            ApproximateSpec(*args)


@pytest.mark.parametrize(
    "change", [{"aggregation": Aggregation.MAX}, {"allow_negative": True}, {"sort_order": SortOrder.ASC},
               {"tie_policy": TiePolicy.FIRST_REACHED}, {"window": "rolling:7d"}],
)  # fmt: skip
def test_an_approximate_board_is_a_positive_sum_board(change: dict[str, object]) -> None:
    with pytest.raises(InvalidBoardError, match="approximate"):
        Board("t", "t", "eu", approximate=ApproximateSpec(5, 0.01, 0.01), **change)  # type: ignore[arg-type]
    assert (
        Board("t", "t", "eu", window="daily", approximate=ApproximateSpec(5, 0.01, 0.01)).counts_board.id
        == "t#counts"
    )


def test_the_list_keeps_the_best_and_evicts_the_worst() -> None:
    candidates = Candidates.of(CandidateList(), 3)
    for item, estimate in [("a", 1), ("b", 5), ("c", 5), ("d", 2), ("e", 1), ("a", 9), ("f", 5)]:
        candidates.offer(item, estimate, 1)
    # d (2) went for f; of equal estimates the larger id ranks worse
    after = candidates.listed(2, 20)
    assert after.items == (("a", 9), ("b", 5), ("c", 5))
    before = CandidateList(1, 20, (("a", 4), ("b", 5), ("x", 3)))  # written before exact counts were kept
    assert changes(before, after) == (["a", "b", "c"], ["x"])  # a, b and c are verified now


def test_a_heavy_item_seen_late_still_joins() -> None:
    candidates = Candidates.of(CandidateList(), 2)
    for i in range(1000):
        candidates.offer(f"i{i}", i % 7, 1)
    candidates.offer("heavy", 100, 100)
    assert ranked(candidates.items, 1) == (("heavy", 100),)


def test_a_joining_item_is_verified_while_nothing_was_dropped_or_when_the_sketch_had_nothing() -> None:
    candidates = Candidates.of(CandidateList(), 2)
    candidates.offer("a", 5, 5)
    candidates.offer("b", 3, 3)
    candidates.offer("a", 7, 2)
    candidates.offer("c", 9, 4)  # in place of b; nothing was dropped before: c was never counted
    candidates.offer("d", 12, 12)  # in place of a; the sketch had 0 for d: d was never counted
    candidates.offer("b", 10, 1)  # in place of c, its first 3 lost with it: not verified
    listed = candidates.listed(1, 30)
    assert listed.shown() == {"d": (12, 12), "b": (10, None)} and not listed.lossless
    assert listed.exact_of() == {"d": (12, True), "b": (1, False)}
    assert Candidates.of(listed, 2).listed(2, 30) == CandidateList(2, 30, listed.items, listed.exact, False)


def test_the_projection_note_holds_a_verified_count_only() -> None:
    assert exact_note(None) == "" and noted_exact("") is None and noted_exact(None) is None
    assert noted_exact(exact_note(12)) == 12 and exact_note(0) == '{"exact":0}'
    assert (
        noted_exact('{"level": 3}') is None
        and noted_exact("[1]") is None
        and noted_exact('{"exact":true}') is None
    )


MEMORY = DedupeMemory(86_400_000)
ITEMS = "abcdefg"
CAPACITY = 3
SHAPE = Shape(8, 2)  # few counters: collisions are common, so the sketch often cannot vouch


def _copies(raw: list[tuple[str, int, int, str, int]]) -> list[AwardEvent]:
    return [
        award(item, f"m{match}", amount, at_ms=at, region=region) for item, match, amount, region, at in raw
    ]


def _truth(copies: list[AwardEvent]) -> dict[str, int]:
    """Per item, the sum of the amounts of its event ids' winning copies (the earliest)."""
    winners: dict[str, AwardEvent] = {}
    for a in copies:
        known = winners.get(a.event_id)
        if known is None or copy_order(copy_of(a)) < copy_order(copy_of(known)):
            winners[a.event_id] = a
    truth: dict[str, int] = {}
    for a in winners.values():
        truth[a.user_id] = truth.get(a.user_id, 0) + a.amount
    return truth


class _Partition:
    """A partition's list of one board as the processor keeps it: awards counted (copies
    deduplicated) and offered, rounds ending in the list written and read back, as a restore does."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity, self.blocks = capacity, dict[tuple[int, int], tuple[int, ...]]()
        self.seen: dict[str, Seen] = {}
        self.listed = CandidateList()
        self.candidates = Candidates.of(self.listed, capacity)
        self.sketch = Sketch(SHAPE, self.blocks.get)
        self.added = 0

    def count(self, a: AwardEvent, erased: bool = False) -> None:
        outcome = count_award(self.seen.get(a.event_id), a, MEMORY)
        if isinstance(outcome, Counted):
            self.seen[a.event_id] = outcome.seen
            estimate = self.sketch.add(a.user_id, outcome.amount)
            self.added += outcome.amount
            if erased:
                self.candidates.count_unlisted()
            else:
                self.candidates.offer(a.user_id, estimate, outcome.amount)

    def end_round(self) -> CandidateList:
        listed = self.candidates.listed(
            self.listed.version + 1, self.listed.total + self.added, self.sketch.estimate
        )
        self.blocks.update(self.sketch.changed_blocks())
        record = CandidateSet(board_id="b", version=listed.version, total=listed.total, items=list(listed.items),
                              exact=list(listed.exact), lossless=listed.lossless)  # fmt: skip
        back = msgspec.msgpack.decode(msgspec.msgpack.encode(record), type=CandidateSet)
        self.listed = CandidateList(
            back.version, back.total, tuple(back.items), tuple(back.exact), back.lossless
        )
        self.candidates, self.sketch, self.added = (
            Candidates.of(self.listed, self.capacity),
            Sketch(SHAPE, self.blocks.get),
            0,
        )
        return self.listed


class CandidatesMachine(RuleBasedStateMachine):
    """Awards of a few items (copies accepted elsewhere, with other payloads, among them), erasures
    and lifts, rounds that store the list and read it back; checked every step against a reference
    model: the list stays bounded, holds no erased item, an exact count never exceeds the item's
    true count and a verified one is exactly it, and a list that never dropped an item holds every
    item counted."""

    def __init__(self) -> None:
        super().__init__()
        self.partition = _Partition()
        self.copies: list[AwardEvent] = []  # every copy read (the model)
        self.erased: set[str] = set()

    @rule(item=st.sampled_from(ITEMS), match=st.integers(0, 4), amount=st.integers(0, 30),
          region=st.sampled_from(["eu", "us"]), at=st.integers(0, 3))  # fmt: skip
    def an_award(self, item: str, match: int, amount: int, region: str, at: int) -> None:
        [a] = _copies([(item, match, amount, region, at)])
        self.copies.append(a)
        self.partition.count(a, erased=item in self.erased)

    @rule(item=st.sampled_from(ITEMS))
    def an_erasure(self, item: str) -> None:
        self.partition.candidates.remove(item)
        self.erased.add(item)

    @rule(item=st.sampled_from(ITEMS))
    def a_lift(self, item: str) -> None:
        self.erased.discard(item)

    @rule()
    def a_round_ends(self) -> None:
        listed = self.partition.end_round()
        assert listed.total == sum(_truth(self.copies).values())
        assert len(listed.exact) == len(listed.items)

    @invariant()
    def exact_counts_are_honest(self) -> None:
        truth, candidates = _truth(self.copies), self.partition.candidates
        assert len(candidates.items) <= CAPACITY and not self.erased & candidates.items.keys()
        for item, (count, verified) in candidates.exact.items():
            assert count <= truth[item] and (not verified or count == truth[item])
            assert candidates.items[item] >= truth[item]  # an estimate is never below
        if candidates.lossless:
            assert {item for item in truth} <= candidates.items.keys()


TestCandidates = CandidatesMachine.TestCase
TestCandidates.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)

AWARDS = st.lists(
    st.tuples(st.sampled_from(ITEMS[:CAPACITY]), st.integers(0, 6), st.integers(0, 40), st.sampled_from(["eu", "us"]),
              st.integers(0, 3)),
    min_size=1, max_size=40,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(AWARDS, st.randoms(use_true_random=False))
def test_with_room_for_every_item_any_order_and_rounds_give_the_same_verified_list(
    raw: list[tuple[str, int, int, str, int]], rnd: random.Random
) -> None:
    """As two regions reading the same copies (and repeats) in other orders and rounds: with at
    most capacity items, both lists hold every item with the same estimate, verified, at its true count."""
    copies = _copies(raw)
    lists = []
    for order in (copies, rnd.sample(copies, len(copies)) + rnd.sample(copies, len(copies) // 2)):
        partition = _Partition()
        for a in order:
            partition.count(a)
            if rnd.random() < 0.2:
                partition.end_round()
        lists.append(partition.end_round())
    first, second = lists
    truth = _truth(copies)
    assert (first.items, first.exact, first.total) == (second.items, second.exact, second.total)
    assert first.lossless and {item: count for item, (_, count) in first.shown().items()} == truth
