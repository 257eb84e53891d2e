"""The aggregation core against a reference model: totals are the fold of distinct awards."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from regions.core.aggregation import (
    Applied,
    Conflict,
    DedupeMemory,
    Duplicate,
    Forgotten,
    OutOfRange,
    PlayerState,
    Seen,
    apply_award,
    fold,
)
from regions.core.boards import Aggregation
from regions.core.ordering import reached_key
from regions.core.validation import MAX_EXACT
from schema.records import AwardEvent
from tests.unit.regions.core.strategies import amounts, award

HORIZON = 1_000
MEMORY = DedupeMemory(horizon_ms=HORIZON)


def _fold_all(state: PlayerState | None, seen: dict[str, Seen], log: list[AwardEvent]) -> PlayerState | None:
    """Apply a log the way the processor does: player state plus a dedupe memory by event id."""
    for a in log:
        outcome = apply_award(state, seen.get(a.event_id), a, MEMORY)
        if isinstance(outcome, Applied):
            state, seen[a.event_id] = outcome.state, outcome.seen
    return state


class AggregatorMachine(RuleBasedStateMachine):
    """Random awards, repeats and conflicting repeats at any distance in time, checked every step."""

    sent = Bundle("sent")

    def __init__(self) -> None:
        super().__init__()
        self.aggregation = Aggregation.SUM
        self.state: PlayerState | None = None
        self.seen: dict[str, Seen] = {}  # the store's dedupe memory
        self.applied: list[tuple[str, int]] = []  # (event id, amount) of every application
        self.clock = 0
        self.versions: list[int] = []

    def _submit(self, match: str, amount: int, at_ms: int) -> object:
        a = award("p", match, amount, aggregation=self.aggregation, at_ms=at_ms)
        outcome = apply_award(self.state, self.seen.get(a.event_id), a, MEMORY)
        if isinstance(outcome, Applied):
            self.state, self.seen[a.event_id] = outcome.state, outcome.seen
            self.versions.append(outcome.state.version)
            self.applied.append((a.event_id, amount))
        return outcome

    @rule(aggregation=st.sampled_from(Aggregation))
    def choose_aggregation(self, aggregation: Aggregation) -> None:
        if self.state is None:
            self.aggregation = aggregation

    @rule(step=st.integers(0, 3 * HORIZON))
    def time_passes(self, step: int) -> None:
        self.clock += step

    @rule(target=sent, match=st.uuids().map(str), amount=amounts)
    def new_award(self, match: str, amount: int) -> tuple[str, int, int]:
        assert isinstance(self._submit(match, amount, self.clock), Applied)
        return match, amount, self.clock

    @rule(original=sent, shift=st.integers(-(HORIZON - 1), HORIZON - 1), other=amounts)
    def repeat_inside_the_horizon_never_applies(
        self, original: tuple[str, int, int], shift: int, other: int
    ) -> None:
        match, amount, _ = original
        event_id = award("p", match, amount).event_id
        remembered = self.seen[event_id]
        before = self.state
        outcome = self._submit(match, other, remembered.at_ms + shift)
        assert isinstance(outcome, Duplicate if other == amount else Conflict)
        assert self.state == before

    @rule(original=sent)
    def repeat_beyond_the_horizon_applies_again(self, original: tuple[str, int, int]) -> None:
        match, amount, _ = original
        remembered = self.seen[award("p", match, amount).event_id]
        self.clock = max(self.clock, remembered.at_ms + HORIZON)
        assert isinstance(self._submit(match, amount, self.clock), Applied)

    @invariant()
    def total_is_fold_of_applied_awards(self) -> None:
        expected = None
        for _, amount in self.applied:
            expected = fold(self.aggregation, expected, amount)
        assert (None if self.state is None else self.state.total) == expected

    @invariant()
    def versions_are_contiguous(self) -> None:
        assert self.versions == list(range(1, len(self.versions) + 1))


TestAggregator = AggregatorMachine.TestCase
TestAggregator.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


distinct_awards = st.lists(st.tuples(amounts, st.integers(0, 5)), min_size=1, max_size=25).map(
    lambda values: [award("p", f"m{i}", v, at_ms=t) for i, (v, t) in enumerate(values)]
)


@given(distinct_awards, st.sampled_from(Aggregation), st.randoms(use_true_random=False))
def test_the_fold_does_not_depend_on_arrival_order(
    log: list[AwardEvent], aggregation: Aggregation, random: object
) -> None:
    log = [AwardEvent(**{**_fields(a), "aggregation": aggregation.value}) for a in log]
    shuffled = list(log)
    random.shuffle(shuffled)  # type: ignore[attr-defined]
    assert _fold_all(None, {}, log) == _fold_all(None, {}, shuffled)


def _fields(a: AwardEvent) -> dict[str, object]:
    return {f: getattr(a, f) for f in a.__struct_fields__}


@given(distinct_awards, st.sampled_from([Aggregation.MAX, Aggregation.MIN]))
def test_best_score_is_reached_by_its_oldest_award(log: list[AwardEvent], aggregation: Aggregation) -> None:
    log = [AwardEvent(**{**_fields(a), "aggregation": aggregation.value}) for a in log]
    state = _fold_all(None, {}, log)
    assert state is not None
    best = [a for a in log if a.amount == state.total]
    assert state.reached == min(reached_key(a.accepted_at_ms, a.event_id) for a in best)


@given(distinct_awards)
def test_a_sum_is_reached_by_its_newest_award(log: list[AwardEvent]) -> None:
    state = _fold_all(None, {}, log)
    assert state is not None
    assert state.reached == max(reached_key(a.accepted_at_ms, a.event_id) for a in log)


@given(st.lists(amounts, min_size=1, max_size=30), st.sampled_from(Aggregation))
def test_replaying_the_same_log_twice_changes_nothing(values: list[int], aggregation: Aggregation) -> None:
    log = [award("p", f"m{i}", v, aggregation=aggregation, at_ms=i) for i, v in enumerate(values)]
    seen: dict[str, Seen] = {}
    state = _fold_all(None, seen, log)
    for a in log:
        assert isinstance(apply_award(state, seen.get(a.event_id), a, MEMORY), Duplicate)


def test_a_busy_player_never_forgets_inside_the_horizon() -> None:
    # Ten thousand other awards in between: the memory is per event id, not a count per player.
    seen: dict[str, Seen] = {}
    first = award("p", "m", 5, at_ms=0)
    state = _fold_all(None, seen, [first] + [award("p", f"o{i}", 1, at_ms=1) for i in range(10_000)])
    assert isinstance(apply_award(state, seen.get(first.event_id), first, MEMORY), Duplicate)


def test_a_copy_accepted_earlier_elsewhere_is_still_a_repeat() -> None:
    later = award("p", "m", 5, at_ms=5_000)
    earlier = award("p", "m", 5, at_ms=5_000 - HORIZON + 1)
    outcome = apply_award(PlayerState(5, 1, "r"), Seen(later.digest, later.accepted_at_ms), earlier, MEMORY)
    assert isinstance(outcome, Duplicate)
    long_before = award("p", "m", 5, at_ms=5_000 - HORIZON)
    outcome = apply_award(
        PlayerState(5, 1, "r"), Seen(later.digest, later.accepted_at_ms), long_before, MEMORY
    )
    assert isinstance(outcome, Applied)


def test_a_possible_repeat_of_a_forgotten_copy_is_not_applied() -> None:
    memory = DedupeMemory(horizon_ms=HORIZON, complete_since_ms=10_000)
    assert isinstance(
        apply_award(None, None, award("p", "m", 5, at_ms=10_000 + HORIZON - 1), memory), Forgotten
    )
    assert isinstance(apply_award(None, None, award("p", "m", 5, at_ms=10_000 + HORIZON), memory), Applied)


def test_total_leaving_the_exact_range_is_refused() -> None:
    first = apply_award(None, None, award("p", "m1", MAX_EXACT - 1), MEMORY)
    assert isinstance(first, Applied)
    assert isinstance(apply_award(first.state, None, award("p", "m2", 1), MEMORY), OutOfRange)


def test_a_lower_score_leaves_a_max_total_and_its_tie_order() -> None:
    first = apply_award(None, None, award("p", "m1", 7, aggregation=Aggregation.MAX, at_ms=1), MEMORY)
    assert isinstance(first, Applied)
    lower = apply_award(first.state, None, award("p", "m2", 3, aggregation=Aggregation.MAX, at_ms=2), MEMORY)
    assert isinstance(lower, Applied)
    assert (lower.state.total, lower.state.reached, lower.state.version) == (7, first.state.reached, 2)
