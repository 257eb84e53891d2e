"""Keep-latest boards against a reference model: the winning copy of the latest award holds the score."""

from __future__ import annotations

from random import Random

from hypothesis import given, settings
from hypothesis import strategies as st

from regions.core import latest
from regions.core.aggregation import (
    Applied,
    DedupeMemory,
    Duplicate,
    PlayerState,
    Replaced,
    Seen,
    apply_award,
    copy_of,
    copy_order,
)
from regions.core.boards import Aggregation
from regions.core.ordering import reached_key
from regions.core.rolling import apply_rolling, expire
from schema.event_id import event_id, payload_digest
from schema.records import AwardEvent

HORIZON = 1_000
MEMORY = DedupeMemory(horizon_ms=HORIZON)


def latest_award(
    match: str, score: int, at_ms: int, *, region: str = "eu", occurred: int | None = None, user: str = "p"
) -> AwardEvent:
    return AwardEvent(
        event_id=event_id("board", match, user, "kill"), digest=payload_digest(score, occurred),
        board_id="board", match_id=match, user_id=user, award_type="kill", amount=score,
        occurred_at_ms=occurred, region=region, accepted_at_ms=at_ms, aggregation=Aggregation.LATEST.value,
        sort_order="DESC", tie_policy="FIRST_REACHED",
    )  # fmt: skip


def fold_all(log: list[AwardEvent]) -> tuple[PlayerState | None, dict[str, Seen], list[int]]:
    """The processor's fold of a log: the player's state, the dedupe memory and the versions made."""
    state: PlayerState | None = None
    seen: dict[str, Seen] = {}
    versions = []
    for a in log:
        outcome = apply_award(state, seen.get(a.event_id), a, MEMORY)
        if isinstance(outcome, Applied | Replaced):
            state, seen[a.event_id] = outcome.state, outcome.seen
            versions.append(outcome.state.version)
    return state, seen, versions


def reference(log: list[AwardEvent]) -> tuple[int, str, dict[str, Seen]]:
    """(score, tie order key, the winning copy of each event id): the winner of an event id is its
    earliest copy; the latest award is the winner with the latest (event time, event id)."""
    winners: dict[str, AwardEvent] = {}
    for a in log:
        if a.event_id not in winners or copy_order(copy_of(a)) < copy_order(copy_of(winners[a.event_id])):
            winners[a.event_id] = a
    last = max(winners.values(), key=lambda a: (a.event_at_ms, a.event_id[:16]))
    return (
        last.amount,
        reached_key(last.accepted_at_ms, last.event_id),
        {e: copy_of(a) for e, a in winners.items()},
    )


# One event: its score, event time (None: none given), acceptance time, and its copies: (region,
# acceptance time after the first copy, same payload?, the other payload's score and event time).
copies = st.lists(
    st.tuples(st.sampled_from(["eu", "us", "ap"]), st.integers(0, HORIZON // 2 - 1), st.booleans(),
              st.integers(-50, 50), st.none() | st.integers(0, 20_000)),
    min_size=1, max_size=3,
)  # fmt: skip
events = st.lists(
    st.tuples(st.integers(-50, 50), st.none() | st.integers(0, 20_000), st.integers(0, 20_000), copies),
    min_size=1, max_size=12,
)  # fmt: skip


def _log(
    drawn: list[tuple[int, int | None, int, list[tuple[str, int, bool, int, int | None]]]],
) -> list[AwardEvent]:
    log = []
    for i, (score, occurred, at, kept) in enumerate(drawn):
        for region, later, same, other, other_time in kept:
            if same:
                log.append(latest_award(f"m{i}", score, at + later, region=region, occurred=occurred))
            else:  # another payload: another score, or another event time (a retry that was rebuilt)
                changed = other if other != score else score + 1
                log.append(latest_award(f"m{i}", changed, at + later, region=region, occurred=other_time))
    return log


@settings(max_examples=300, deadline=None)
@given(events, st.randoms(use_true_random=False), st.integers(0, 3))
def test_every_arrival_order_holds_the_latest_winners_score(
    drawn: list[tuple[int, int | None, int, list[tuple[str, int, bool, int, int | None]]]],
    random: Random, replays: int,
) -> None:  # fmt: skip
    log = _log(drawn)
    score, reached, winners = reference(log)
    states = []
    for _ in range(3):  # three regions, each reading every copy (and replays of some) in its own order
        order = list(log) + random.sample(log, min(replays, len(log)))
        random.shuffle(order)
        state, seen, versions = fold_all(order)
        assert state is not None
        assert (state.total, state.reached) == (score, reached)
        assert seen == winners  # the same winning copy of every event id
        assert versions == list(range(1, len(versions) + 1))
        states.append(state)
    # the same kept awards everywhere: a later replacement recomputes the same latest
    assert states[0].contributions == states[1].contributions == states[2].contributions


def test_an_older_award_arriving_later_keeps_the_newer_score() -> None:
    newer = latest_award("m2", 70, at_ms=5_000, occurred=2_000)
    older = latest_award("m1", 90, at_ms=6_000, occurred=1_000)
    first = apply_award(None, None, newer, MEMORY)
    assert isinstance(first, Applied)
    outcome = apply_award(first.state, None, older, MEMORY)
    # applied (its own version and audit row, as a lower score on a MAX board), the total unchanged
    assert isinstance(outcome, Applied)
    assert (outcome.state.total, outcome.state.reached, outcome.state.version) == (70, first.state.reached, 2)
    assert first.state.reached == reached_key(5_000, newer.event_id)  # the holder's own tie key


def test_without_event_times_the_later_accepted_award_is_the_latest() -> None:
    state, _, _ = fold_all([latest_award("m2", 5, at_ms=2_000), latest_award("m1", 9, at_ms=1_000)])
    assert state is not None and state.total == 5


def test_a_winning_copy_that_moves_the_latest_back_recomputes_it() -> None:
    a = latest_award("a", 10, at_ms=1_000, occurred=100)
    b_us = latest_award("b", 20, at_ms=1_400, region="us", occurred=300)
    b_eu = latest_award("b", 25, at_ms=1_200, region="eu", occurred=50)  # rebuilt: another event time
    state, seen, _ = fold_all([a, b_us])
    assert state is not None and state.total == 20
    outcome = apply_award(state, seen[b_eu.event_id], b_eu, MEMORY)
    assert isinstance(outcome, Replaced) and outcome.refused == copy_of(b_us)
    assert (outcome.state.total, outcome.state.reached, outcome.state.version) == (
        10, reached_key(1_000, a.event_id), 3,
    )  # fmt: skip
    elsewhere, _, _ = fold_all([b_eu, a, b_us])  # a region that read the winner first
    assert elsewhere is not None and (elsewhere.total, elsewhere.reached) == (10, outcome.state.reached)


def test_a_replay_changes_nothing() -> None:
    award = latest_award("m", 4, at_ms=10, occurred=5)
    state, seen, _ = fold_all([award])
    assert isinstance(apply_award(state, seen[award.event_id], award, MEMORY), Duplicate)


def test_latest_keys_sort_by_event_time_also_before_1970() -> None:
    eid = "0" * 32
    keys = [latest.latest_key(t, 5, eid) for t in (-(10**13), -1, 0, 1, 10**13)]
    assert keys == sorted(keys) and len(set(map(len, keys))) == 1
    assert latest.reached_of(keys[0]) == reached_key(5, eid)


def test_a_state_kept_without_contributions_is_read_as_its_holder() -> None:
    eid = event_id("board", "old", "p", "kill")
    corrected = PlayerState(7, 3, reached_key(5_000, eid))  # e.g. a correction's state
    older = apply_award(corrected, None, latest_award("m1", 1, at_ms=4_000), MEMORY)
    newer = apply_award(corrected, None, latest_award("m2", 2, at_ms=6_000), MEMORY)
    assert isinstance(older, Applied) and isinstance(newer, Applied)
    assert (older.state.total, newer.state.total) == (7, 2)


def test_only_a_bounded_number_of_the_latest_awards_is_kept() -> None:
    log = [latest_award(f"m{i}", i, at_ms=i * 10) for i in range(40)]
    state, _, _ = fold_all(log)
    assert state is not None and state.total == 39
    assert len(state.contributions) == latest.KEPT_LATEST
    assert min(state.contributions)[1] == 40 - latest.KEPT_LATEST


def test_awards_no_copy_can_replace_any_more_keep_only_the_latest_of_them() -> None:
    entries = tuple(latest.contribution(latest_award(f"m{i}", i, at_ms=i * 10)) for i in range(6))
    assert latest.kept(entries, complete_since_ms=25) == entries[2:]  # m0..m2 are final: m2 and newer stay
    assert latest.kept(entries, complete_since_ms=None) == entries


def test_a_rolling_board_holds_the_latest_award_of_the_days_in_the_window() -> None:
    day_one = latest_award("m1", 30, at_ms=1_000, occurred=100)
    day_two = latest_award("m2", 20, at_ms=2_000, occurred=200)
    two = apply_rolling(None, None, day_two, MEMORY, day=2, expired_through=None)
    assert isinstance(two, Applied)
    one = apply_rolling(two.state, None, day_one, MEMORY, day=1, expired_through=None)
    assert isinstance(one, Applied)
    assert (one.state.total, one.state.reached) == (20, reached_key(2_000, day_two.event_id))
    expired = expire(Aggregation.LATEST, one.state, 1)
    assert expired is not None and (expired.total, expired.version) == (20, 3)
    assert expire(Aggregation.LATEST, expired, 2) is not None


def test_on_a_board_with_periods_only_an_identical_copy_replaces_the_latest() -> None:
    us = latest_award("m", 30, at_ms=2_000, region="us", occurred=500)
    first = apply_award(None, None, us, MEMORY, same_state=False)
    assert isinstance(first, Applied)
    rebuilt = latest_award("m", 30, at_ms=1_500, occurred=400)  # another event time: maybe another period
    assert not isinstance(apply_award(first.state, first.seen, rebuilt, MEMORY, same_state=False), Replaced)
    identical = latest_award("m", 30, at_ms=1_500, occurred=500)
    outcome = apply_award(first.state, first.seen, identical, MEMORY, same_state=False)
    assert isinstance(outcome, Replaced)
    assert (outcome.state.total, outcome.state.reached) == (30, reached_key(1_500, us.event_id))
