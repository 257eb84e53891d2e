"""The feed's pure state: membership with joiners, sequences that never go backwards, resyncs, and
a projection being rebuilt."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.core.feed import BoardSnapshot, FeedState, Round, TooManyPlayers
from gateway.core.hints import Hint, parse_hint
from gateway.core.updates import PlayerState, RankChange, ResyncNeeded, ScoreUpdate, StatusChange, TopKChange
from regions.core.reads import AsOf

FRESH = AsOf("local", {("local", 0): 10}, 1_700_000_000_000, False)
STALE = AsOf("local", {}, None, True)


def hint(sequence: int) -> Hint:
    return Hint("b", sequence, {("local", 0): sequence}, (), False)


def snapshot(as_of: AsOf, top: tuple[tuple[str, int], ...], **players: PlayerState) -> BoardSnapshot:
    return BoardSnapshot(as_of, top, dict(players))


def test_the_last_member_leaving_does_not_empty_a_feed_someone_is_joining() -> None:
    feed: FeedState[str] = FeedState("b", max_players=10)
    assert feed.join("watcher", None) is False
    assert feed.join("joiner", "bob") is True  # bob's standing must be read first

    assert feed.leave("watcher") is False  # the joiner keeps the feed open
    assert list(feed.ready_members()) == []
    feed.joined("bob", PlayerState(2, 40, 1))

    assert list(feed.ready_members()) == ["joiner"]
    assert list(feed.ready_members("bob")) == ["joiner"]
    assert feed.leave("joiner") is True


def test_members_of_one_player_share_its_read_and_the_player_is_dropped_with_the_last() -> None:
    feed: FeedState[str] = FeedState("b", max_players=1)
    assert feed.join("m1", "bob") is True
    assert feed.join("m2", "bob") is False  # already being read
    with pytest.raises(TooManyPlayers):
        feed.join("m3", "cat")
    feed.joined("bob", PlayerState(1, 9, 1))
    feed.leave("m1")
    assert feed.take().users == []  # no hint yet
    feed.hint(hint(1))
    assert feed.take().users == ["bob"]
    feed.leave("m2")

    assert feed.join("m4", "cat") is True  # bob's slot is free again


def test_a_restarted_upstream_sequence_gives_resync_and_the_told_sequence_keeps_rising() -> None:
    feed: FeedState[str] = FeedState("b", max_players=10)
    for sequence in (5, 6):
        feed.hint(hint(sequence))
    assert feed.take().sequence == 6

    feed.hint(hint(1))  # the projector lost its count
    step = feed.take()
    feed.hint(hint(2))

    assert step.resync == ResyncNeeded("b", "sequence_reset", 7)
    assert step.sequence == 7
    assert feed.take() == Round(None, hint(2), [], 8)


def test_a_gap_gives_resync() -> None:
    feed: FeedState[str] = FeedState("b", max_players=10)
    feed.hint(hint(3))
    feed.take()
    feed.hint(hint(5))

    assert feed.take().resync == ResyncNeeded("b", "gap", 5)


def test_a_stale_read_gives_one_resync_and_the_last_fresh_standing_is_kept() -> None:
    feed: FeedState[str] = FeedState("b", max_players=10)
    feed.baseline((("ann", 50), ("bob", 40)))
    feed.join("m", "bob")
    feed.joined("bob", PlayerState(2, 40, 3))
    partial = snapshot(STALE, (), bob=PlayerState())  # the board was wiped and is being rebuilt

    feed.hint(hint(1))
    first = feed.observe(partial, feed.take())
    feed.hint(hint(2))
    second = feed.observe(partial, feed.take())
    feed.hint(hint(3))
    rebuilt = feed.observe(
        snapshot(FRESH, (("ann", 50), ("bob", 40)), bob=PlayerState(2, 40, 3)), feed.take()
    )

    assert first == [(None, ResyncNeeded("b", "projection_rebuilding", 1))]
    assert second == []
    assert rebuilt == []  # no rank to null and back, no top change


def test_updates_carry_the_rounds_sequence_and_the_hints_positions() -> None:
    feed: FeedState[str] = FeedState("b", max_players=10)
    feed.baseline((("ann", 50),))
    feed.join("m", "bob")
    feed.joined("bob", PlayerState())
    feed.hint(hint(4))
    step = feed.take()
    feed.hint(hint(5))  # arrives while the round reads: not this round's sequence

    deliveries = feed.observe(snapshot(FRESH, (("bob", 60), ("ann", 50)), bob=PlayerState(1, 60, 1)), step)

    as_of = AsOf("local", {("local", 0): 10}, 1_700_000_000_000, False)
    assert deliveries == [
        ("bob", ScoreUpdate("b", "bob", 60, 1, 1, 4, as_of)),
        ("bob", RankChange("b", "bob", None, 1, 4, as_of)),
        (None, TopKChange("b", 10, 4, as_of)),
    ]


events = st.lists(
    st.one_of(st.integers(0, 30).map(lambda s: ("hint", s)), st.just(("resync", 0)), st.just(("round", 0))),
    max_size=60,
)


@given(events)
def test_whatever_the_upstream_does_members_are_never_told_a_lower_sequence(
    ops: list[tuple[str, int]],
) -> None:
    feed: FeedState[str] = FeedState("b", max_players=10)
    feed.baseline(())
    told: list[int] = []
    last_upstream, resync_owed = None, False
    for op, value in ops:
        if op == "hint":
            if last_upstream is not None and value != last_upstream + 1:
                resync_owed = True
            feed.hint(hint(value))
            last_upstream = value
        elif op == "resync":
            feed.resync("upstream_reconnected")
            last_upstream, resync_owed = None, True
        else:
            step = feed.take()
            if resync_owed:
                assert step.resync is not None
                resync_owed = False
            if step.resync is not None:
                told.append(step.resync.sequence)
            if step.hint is not None:
                top = (("u", step.hint.sequence),)
                told += [u.sequence for _, u in feed.observe(snapshot(FRESH, top), step)]
                told.append(step.sequence)
    assert told == sorted(told)


def test_a_status_hint_is_told_to_every_member_with_its_sequence_and_needs_no_read() -> None:
    feed: FeedState[str] = FeedState("b", max_players=10)
    feed.hint(hint(3))
    feed.take()
    raw = b'{"boardId":"b","sequence":4,"status":{"status":"CLOSED","resultVersion":2}}'
    feed.hint(parse_hint(raw))

    step = feed.take()

    assert step.status == StatusChange("b", "CLOSED", 2, 4)
    assert step.hint is None and step.resync is None  # nothing to read: the standings did not change
    feed.hint(hint(5))
    assert feed.take().resync is None  # one sequence with the projector's hints: no gap
