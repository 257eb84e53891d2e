"""The aggregation core against a reference model: totals are the fold of distinct awards."""

from __future__ import annotations

from dataclasses import dataclass
from random import Random

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from regions.core.aggregation import (
    KEPT_NEWEST,
    Applied,
    Conflict,
    DedupeMemory,
    Duplicate,
    Forgotten,
    OutOfRange,
    PlayerState,
    Replaced,
    Seen,
    apply_award,
    copy_of,
    copy_order,
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
        if isinstance(outcome, Applied | Replaced):
            state, seen[a.event_id] = outcome.state, outcome.seen
    return state


@dataclass
class Life:
    """One application of an event id and the copies read within the horizon of its winner."""

    copies: list[AwardEvent]

    def winner(self) -> AwardEvent:
        return min(self.copies, key=lambda a: copy_order(copy_of(a)))


def _key(a: AwardEvent) -> str:
    return reached_key(a.accepted_at_ms, a.event_id)


def _expected(aggregation: Aggregation, winners: list[AwardEvent]) -> tuple[int, str]:
    """(total, tie order key) of the winning copies, by the documented rule (awards without event
    times: LATEST's latest is the newest winner by acceptance time, then event id)."""
    if aggregation is Aggregation.LATEST:
        last = max(winners, key=lambda a: (a.accepted_at_ms, a.event_id[:16]))
        return last.amount, _key(last)
    total = None
    for a in winners:
        total = fold(aggregation, total, a.amount)
    assert total is not None
    if aggregation is Aggregation.SUM:
        return total, max(_key(a) for a in winners)
    return total, min(_key(a) for a in winners if a.amount == total)


def _metadata(at_ms: int, region: str) -> str:
    """Each copy's own metadata (some have none): a copy sent again carries the same."""
    return f'{{"at":{at_ms},"r":"{region}"}}' if at_ms % 2 else ""


class AggregatorMachine(RuleBasedStateMachine):
    """Random awards, repeats and conflicting repeats (other regions' copies among them) at any
    distance in time, checked every step against a reference model: the total is the fold of each
    application's winning copy, and the tie order follows the documented rule."""

    sent = Bundle("sent")

    def __init__(self) -> None:
        super().__init__()
        self.aggregation = Aggregation.SUM
        self.state: PlayerState | None = None
        self.seen: dict[str, Seen] = {}  # the store's dedupe memory
        self.lives: dict[str, list[Life]] = {}  # per event id, its applications (the model)
        self.clock = 0
        self.versions: list[int] = []
        self.replaced: set[tuple[str, int]] = set()  # SUM: applications replaced by an earlier copy

    def _award(self, match: str, amount: int, at_ms: int, region: str) -> AwardEvent:
        return award("p", match, amount, aggregation=self.aggregation, at_ms=at_ms, region=region,
                     metadata=_metadata(at_ms, region))  # fmt: skip

    def _submit(self, match: str, amount: int, at_ms: int, region: str = "eu") -> object:
        a = self._award(match, amount, at_ms, region)
        outcome = apply_award(self.state, self.seen.get(a.event_id), a, MEMORY)
        if isinstance(outcome, Applied):
            self.lives.setdefault(a.event_id, []).append(Life([a]))
        elif isinstance(outcome, Replaced | Duplicate | Conflict):
            self.lives[a.event_id][-1].copies.append(a)
        if isinstance(outcome, Applied | Replaced):
            self.state, self.seen[a.event_id] = outcome.state, outcome.seen
            self.versions.append(outcome.state.version)
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

    @rule(original=sent, shift=st.integers(-(HORIZON - 1), HORIZON - 1), other=amounts,
          region=st.sampled_from(["eu", "us", "ap"]))  # fmt: skip
    def repeat_inside_the_horizon_never_counts_twice(
        self, original: tuple[str, int, int], shift: int, other: int, region: str
    ) -> None:
        match, amount, _ = original
        event_id = award("p", match, amount).event_id
        remembered = self.seen[event_id]
        life = (event_id, len(self.lives[event_id]))
        if self.aggregation is Aggregation.SUM and life not in self.replaced:
            copy = self._award(match, other, remembered.at_ms + shift, region)
            if copy_order(copy_of(copy)) < copy_order(remembered) and len(self.replaced) >= KEPT_NEWEST - 1:
                return  # beyond the documented bound of exact SUM tie orders (KEPT_NEWEST)
        before = self.state
        outcome = self._submit(match, other, remembered.at_ms + shift, region)
        assert isinstance(outcome, Duplicate | Conflict | Replaced)
        if isinstance(outcome, Replaced) and self.aggregation is Aggregation.SUM:
            self.replaced.add(life)
        if not isinstance(outcome, Replaced):
            assert self.state == before  # a copy that loses changes nothing
        winner = self.lives[event_id][-1].winner()
        assert self.seen[event_id] == copy_of(winner)

    @rule(original=sent)
    def repeat_beyond_the_horizon_applies_again(self, original: tuple[str, int, int]) -> None:
        match, amount, _ = original
        remembered = self.seen[award("p", match, amount).event_id]
        self.clock = max(self.clock, remembered.at_ms + HORIZON)
        assert isinstance(self._submit(match, amount, self.clock), Applied)

    @rule(original=sent, amount=amounts)
    def same_copy_again_changes_nothing(self, original: tuple[str, int, int], amount: int) -> None:
        match, first_amount, _ = original
        remembered = self.seen[award("p", match, first_amount).event_id]
        before = self.state
        again = award("p", match, remembered.amount or 0, aggregation=self.aggregation, at_ms=remembered.at_ms,
                      region=remembered.region, metadata=_metadata(remembered.at_ms, remembered.region))  # fmt: skip
        assert isinstance(apply_award(self.state, remembered, again, MEMORY), Duplicate)
        assert self.state == before

    @invariant()
    def total_and_tie_order_follow_the_winners(self) -> None:
        winners = [life.winner() for lives in self.lives.values() for life in lives]
        if not winners:
            assert self.state is None
            return
        assert self.state is not None
        assert (self.state.total, self.state.reached) == _expected(self.aggregation, winners)
        [holder] = [a for a in winners if _key(a) == self.state.reached]
        assert self.state.metadata == holder.metadata  # the award that holds the score

    @invariant()
    def versions_are_contiguous(self) -> None:
        assert self.versions == list(range(1, len(self.versions) + 1))


TestAggregator = AggregatorMachine.TestCase
TestAggregator.settings = settings(max_examples=200, stateful_step_count=40, deadline=None)


copy_of_an_award = st.tuples(
    st.sampled_from(["eu", "us", "ap"]), st.integers(0, HORIZON // 2 - 1), st.booleans()
)


Copies = list[tuple[int, list[tuple[str, int, bool]]]]  # (amount, its copies: region, time, same payload)


def _within_the_bound(events: Copies) -> Copies:
    """At most ``KEPT_NEWEST - 1`` of the awards have several copies: a SUM player's tie order is
    exact while fewer than that many of its newest awards are each replaced by an earlier copy."""
    several = 0
    kept = []
    for amount, copies in events:
        if len(copies) > 1:
            several += 1
            copies = copies if several < KEPT_NEWEST else copies[:1]
        kept.append((amount, copies))
    return kept


copies_of_awards = st.lists(
    st.tuples(amounts, st.lists(copy_of_an_award, min_size=1, max_size=3)), min_size=1, max_size=8
).map(_within_the_bound)


@given(copies_of_awards, st.sampled_from(Aggregation), st.randoms(use_true_random=False))
def test_copies_accepted_in_several_regions_converge_whatever_the_arrival_order(
    events: Copies, aggregation: Aggregation, random: Random
) -> None:
    log = [
        award("p", f"m{i}", amount if same else amount + 1 + j, aggregation=aggregation, at_ms=at, region=r,
              metadata="" if at % 3 == 0 else f'{{"copy":"{r}{at}"}}')  # (some copies without any)
        for i, (amount, copies) in enumerate(events)
        for j, (r, at, same) in enumerate(copies)
    ]  # fmt: skip
    folds = []
    for _ in range(3):  # three regions, each reading every copy in an order of its own
        order = list(log)
        random.shuffle(order)
        state = _fold_all(None, {}, order)
        assert state is not None
        folds.append((state.total, state.reached, state.metadata))
    assert folds[0] == folds[1] == folds[2]
    winners = [min((a for a in log if a.match_id == f"m{i}"), key=lambda a: copy_order(copy_of(a)))
               for i in range(len(events))]  # fmt: skip
    assert folds[0][:2] == _expected(aggregation, winners)
    # The entry shows the metadata of the winning copy that holds the score (the tie order's award).
    [holder] = [a for a in winners if _key(a) == folds[0][1]]
    assert folds[0][2] == holder.metadata


def test_a_retry_in_another_region_replaces_the_later_copy_applied_first() -> None:
    later = award("p", "m", 30, at_ms=2_000, region="us")
    earlier = award("p", "m", 20, at_ms=1_500, region="eu")
    first = apply_award(None, None, later, MEMORY)
    assert isinstance(first, Applied)
    outcome = apply_award(first.state, first.seen, earlier, MEMORY)
    assert isinstance(outcome, Replaced)
    assert (outcome.state.total, outcome.state.version) == (20, 2)
    assert outcome.seen == copy_of(earlier) and outcome.refused == copy_of(later)
    other_region = apply_award(None, None, earlier, MEMORY)
    assert isinstance(other_region, Applied)
    there = apply_award(other_region.state, other_region.seen, later, MEMORY)
    assert isinstance(there, Conflict)  # the later copy loses there too, and changes nothing
    assert (other_region.state.total, other_region.state.reached) == (
        outcome.state.total,
        outcome.state.reached,
    )


def test_a_max_board_recomputes_its_best_without_the_replaced_copy() -> None:
    def max_award(match: str, score: int, at_ms: int, region: str = "eu") -> AwardEvent:
        return award("p", match, score, aggregation=Aggregation.MAX, at_ms=at_ms, region=region)

    state = None
    seen: dict[str, Seen] = {}
    state = _fold_all(state, seen, [max_award("m1", 50, 10), max_award("m2", 90, 20, "us")])
    assert state is not None and state.total == 90
    outcome = apply_award(state, seen[max_award("m2", 0, 0).event_id], max_award("m2", 40, 15, "eu"), MEMORY)
    assert isinstance(outcome, Replaced)
    assert outcome.state.total == 50 and outcome.state.reached == _key(max_award("m1", 50, 10))


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
    outcome = apply_award(PlayerState(5, 1, "r"), copy_of(later), earlier, MEMORY)
    assert isinstance(outcome, Replaced)  # the earlier copy wins: same total, its own audit row
    assert (outcome.state.total, outcome.seen) == (5, copy_of(earlier))
    outcome = apply_award(PlayerState(5, 1, "r"), Seen(later.digest, later.accepted_at_ms), earlier, MEMORY)
    assert isinstance(outcome, Duplicate)  # memory kept before amounts were: the first copy stays
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


def test_on_a_board_with_periods_only_an_identical_copy_replaces_the_remembered_one() -> None:
    later = award("p", "m", 30, at_ms=2_000, region="us")
    first = apply_award(None, None, later, MEMORY, same_state=False)
    assert isinstance(first, Applied)
    conflicting = award("p", "m", 20, at_ms=1_500, region="eu")
    assert isinstance(apply_award(first.state, first.seen, conflicting, MEMORY, same_state=False), Conflict)
    identical = award("p", "m", 30, at_ms=1_500, region="eu")
    outcome = apply_award(first.state, first.seen, identical, MEMORY, same_state=False)
    assert isinstance(outcome, Replaced) and outcome.seen == copy_of(identical)
