"""The aggregation core against a reference model: totals are the fold of distinct awards."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from regions.core.aggregation import (
    Applied,
    Conflict,
    DedupePolicy,
    Duplicate,
    OutOfRange,
    PlayerState,
    apply_award,
    fold,
)
from regions.core.boards import Aggregation
from regions.core.validation import MAX_EXACT
from schema.records import unpack_seen
from tests.unit.regions.core.strategies import amounts, award

WIDE = DedupePolicy(horizon_ms=10**12, max_recent=10_000)


class AggregatorMachine(RuleBasedStateMachine):
    """Random awards, identical repeats and conflicting repeats, checked after every step."""

    sent = Bundle("sent")

    def __init__(self) -> None:
        super().__init__()
        self.aggregation = Aggregation.SUM
        self.state: PlayerState | None = None
        self.applied: dict[str, int] = {}  # event id -> amount, in first-application order
        self.clock = 0
        self.versions: list[int] = []

    def _submit(self, match: str, amount: int) -> object:
        self.clock += 1
        outcome = apply_award(
            self.state,
            award("p", match, amount, aggregation=self.aggregation, at_ms=self.clock),
            f"{self.clock:027x}",
            WIDE,
        )
        if isinstance(outcome, Applied):
            self.state = outcome.state
            self.versions.append(outcome.state.version)
        return outcome

    @rule(aggregation=st.sampled_from(Aggregation))
    def choose_aggregation(self, aggregation: Aggregation) -> None:
        if self.state is None:
            self.aggregation = aggregation

    @rule(target=sent, match=st.uuids().map(str), amount=amounts)
    def new_award(self, match: str, amount: int) -> tuple[str, int]:
        outcome = self._submit(match, amount)
        assert isinstance(outcome, Applied)
        self.applied[unpack_seen(outcome.state.recent)[-1].event_id] = amount
        return match, amount

    @rule(original=sent)
    def identical_repeat_changes_nothing(self, original: tuple[str, int]) -> None:
        before = self.state
        assert isinstance(self._submit(*original), Duplicate)
        assert self.state == before

    @rule(original=sent, other=amounts)
    def conflicting_repeat_changes_nothing(self, original: tuple[str, int], other: int) -> None:
        before = self.state
        outcome = self._submit(original[0], other)
        assert isinstance(outcome, Duplicate if other == original[1] else Conflict)
        assert self.state == before

    @invariant()
    def total_is_fold_of_distinct_awards(self) -> None:
        expected = None
        for amount in self.applied.values():
            expected = fold(self.aggregation, expected, amount)
        assert (None if self.state is None else self.state.total) == expected

    @invariant()
    def versions_are_contiguous(self) -> None:
        assert self.versions == list(range(1, len(self.versions) + 1))
        assert len(self.versions) == len(self.applied)


TestAggregator = AggregatorMachine.TestCase
TestAggregator.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


@given(st.lists(amounts, min_size=1, max_size=30), st.sampled_from(Aggregation))
def test_replaying_the_same_log_twice_changes_nothing(values: list[int], aggregation: Aggregation) -> None:
    log = [award("p", f"m{i}", v, aggregation=aggregation, at_ms=i) for i, v in enumerate(values)]
    state = None
    for a in log:
        outcome = apply_award(state, a, "0" * 27, WIDE)
        assert isinstance(outcome, Applied)
        state = outcome.state
    for a in log:
        assert isinstance(apply_award(state, a, "0" * 27, WIDE), Duplicate)


def test_repeat_after_the_horizon_is_applied_again() -> None:
    policy = DedupePolicy(horizon_ms=1000, max_recent=10)
    first = apply_award(None, award("p", "m", 5, at_ms=0), "a", policy)
    assert isinstance(first, Applied)
    later = apply_award(first.state, award("p", "m", 5, at_ms=5000), "b", policy)
    assert isinstance(later, Applied) and later.state.total == 10


def test_dedupe_memory_is_bounded_per_player() -> None:
    policy = DedupePolicy(horizon_ms=10**9, max_recent=3)
    state = None
    for i in range(10):
        outcome = apply_award(state, award("p", f"m{i}", 1, at_ms=i), "a", policy)
        assert isinstance(outcome, Applied)
        state = outcome.state
    assert state is not None and [e.at_ms for e in unpack_seen(state.recent)] == [7, 8, 9]


def test_total_leaving_the_exact_range_is_refused() -> None:
    first = apply_award(None, award("p", "m1", MAX_EXACT - 1), "a", WIDE)
    assert isinstance(first, Applied)
    assert isinstance(apply_award(first.state, award("p", "m2", 1), "b", WIDE), OutOfRange)


def test_first_reached_moves_only_when_the_total_changes() -> None:
    first = apply_award(None, award("p", "m1", 7, aggregation=Aggregation.MAX), "a", WIDE)
    assert isinstance(first, Applied)
    lower = apply_award(first.state, award("p", "m2", 3, aggregation=Aggregation.MAX), "b", WIDE)
    assert isinstance(lower, Applied)
    assert (lower.state.total, lower.state.reached, lower.state.version) == (7, "a", 2)


def test_a_repeat_past_either_dedupe_limit_is_applied_again() -> None:
    policy = DedupePolicy(horizon_ms=1000, max_recent=2)
    first = apply_award(None, award("p", "m1", 5, at_ms=0), "a", policy)
    assert isinstance(first, Applied)
    late = apply_award(first.state, award("p", "m1", 5, at_ms=1000), "b", policy)
    pushed_out = first.state
    for at_ms, match in [(1, "m2"), (2, "m3")]:
        step = apply_award(pushed_out, award("p", match, 1, at_ms=at_ms), "c", policy)
        assert isinstance(step, Applied)
        pushed_out = step.state
    within_both = apply_award(pushed_out, award("p", "m3", 1, at_ms=3), "d", policy)
    recounted = apply_award(pushed_out, award("p", "m1", 5, at_ms=3), "d", policy)
    assert isinstance(late, Applied) and isinstance(recounted, Applied)
    assert isinstance(within_both, Duplicate)
