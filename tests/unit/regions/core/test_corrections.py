"""Corrections as pure rules: their input, their idempotency, their versions, applying a record, and
the home region's steps to publish one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from regions.core.aggregation import (
    Conflict,
    DedupeMemory,
    Duplicate,
    Forgotten,
    OutOfRange,
    PlayerState,
    Seen,
)
from regions.core.approximate import ApproximateSpec
from regions.core.boards import Board, BoardStatus
from regions.core.corrections import (
    Adjustment,
    ArchiveVersion,
    AwaitProjection,
    Corrected,
    CorrectionRequest,
    UnknownPlayer,
    WriteRecords,
    apply_correction,
    approximate_refusal,
    content_digest,
    correction_step,
    is_final,
    next_result_version,
    not_in_result,
    parse_correction,
)
from regions.core.lifecycle import announced_state, parse_position_name, position_name
from regions.core.reads import board_positions
from regions.core.validation import FieldError
from schema.event_id import correction_event_id
from schema.lifecycle import CorrectionRecord

MEMORY = DedupeMemory(horizon_ms=1_000)


def _record(score: int = 42, version: int = 2, at_ms: int = 5_000) -> CorrectionRecord:
    return CorrectionRecord(board_id="b", correction_id="c1", user_id="ann", score=score, result_version=version,
                            created_at_ms=at_ms, region="eu", sort_order="DESC", tie_policy="USER_ID",
                            regions=["eu"])  # fmt: skip


def test_a_valid_correction_keeps_its_adjustments_in_order() -> None:
    parsed = parse_correction("b", "c1", "cheater removed", [("ann", 10), ("bob", -3)])
    assert parsed == CorrectionRequest(
        "b", "c1", "cheater removed", (Adjustment("ann", 10), Adjustment("bob", -3))
    )


def test_every_problem_of_a_correction_is_named_with_its_field() -> None:
    problems = parse_correction("b", "", " ", [("ann", 1), ("", 2), ("ann", 2**53)], at="input.")
    assert problems == [
        FieldError("input.correctionId", "must be 1..128 characters, got 0"),
        FieldError("input.reason", "must not be only white space"),
        FieldError("input.adjustments[1].userId", "must be 1..128 characters, got 0"),
        FieldError("input.adjustments[2].userId", "'ann' is adjusted twice (also adjustments[0])"),
        FieldError("input.adjustments[2].score", "must be an exact integer with |score| < 2^53"),
    ]
    assert parse_correction("b", "c1", "r", []) == [
        FieldError("adjustments", "must hold 1..1000 adjustments, got 0")
    ]
    many = [(f"p{i}", 1) for i in range(1001)]
    assert parse_correction("b", "c1", "r", many) == [
        FieldError("adjustments", "must hold 1..1000 adjustments, got 1001")
    ]


@given(
    st.dictionaries(st.text(min_size=1, max_size=4), st.integers(-100, 100), min_size=1, max_size=6),
    st.randoms(),
)
def test_the_content_of_a_correction_does_not_depend_on_the_order_of_its_adjustments(
    scores: dict[str, int], rng: object
) -> None:
    adjustments = [Adjustment(u, s) for u, s in scores.items()]
    shuffled = list(adjustments)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    assert content_digest("r", adjustments) == content_digest("r", shuffled)
    assert content_digest("r", adjustments) != content_digest("other", adjustments)
    changed = [Adjustment(adjustments[0].user_id, adjustments[0].score + 1), *adjustments[1:]]
    assert content_digest("r", changed) != content_digest("r", adjustments)


def test_versions_follow_the_close_result_and_players_must_be_in_it() -> None:
    assert next_result_version(None) == 2 and next_result_version(2) == 3
    adjustments = (Adjustment("ann", 1), Adjustment("zed", 2), Adjustment("bob", 3))
    assert not_in_result(adjustments, {"ann": True, "bob": True, "zed": False}) == [1]


def test_an_approximate_board_takes_no_correction_and_the_refusal_names_its_field() -> None:
    trending = Board("trending", "Trending", "eu", approximate=ApproximateSpec(10, 0.01, 0.01))
    refusal = approximate_refusal(trending, "input.leaderboardId: ")
    assert refusal is not None and refusal.startswith(
        "input.leaderboardId: leaderboard 'trending' is approximate (trending): its result holds estimated "
        "counts of its best 10 items, not final scores, so it takes no corrections"
    )
    daily = trending.for_period("2026-12-04")  # a period is refused under its board's id
    assert approximate_refusal(daily, "") == refusal.removeprefix("input.leaderboardId: ")
    assert approximate_refusal(Board("season", "Season", "eu"), "input.leaderboardId: ") is None


def test_a_record_sets_the_score_as_the_next_version_and_keeps_the_tie_order() -> None:
    outcome = apply_correction(PlayerState(17, 4, "r-17"), None, _record(), MEMORY)
    assert isinstance(outcome, Corrected)
    assert outcome.state == PlayerState(42, 5, "r-17") and outcome.seen.at_ms == 5_000
    again = apply_correction(outcome.state, outcome.seen, _record(), MEMORY)
    assert again == Duplicate(correction_event_id("b", "c1", "ann"))
    other = apply_correction(outcome.state, Seen(outcome.seen.digest, 5_000), _record(score=43), MEMORY)
    assert isinstance(other, Conflict)
    assert isinstance(apply_correction(None, None, _record(), MEMORY), UnknownPlayer)
    assert isinstance(
        apply_correction(PlayerState(1, 1, "r"), None, _record(score=2**53), MEMORY), OutOfRange
    )
    forgetful = DedupeMemory(horizon_ms=1_000, complete_since_ms=9_000)
    assert isinstance(apply_correction(PlayerState(1, 1, "r"), None, _record(), forgetful), Forgotten)


def test_a_board_is_final_once_every_region_has_its_cutoff() -> None:
    assert is_final(("eu", "us"), {"eu": True, "us": True})
    assert not is_final(("eu", "us"), {"eu": True})


def test_the_home_region_writes_waits_for_the_projection_then_archives() -> None:
    adjustments = (Adjustment("ann", 42), Adjustment("bob", 7))
    assert correction_step(None, {}, adjustments, {}) == WriteRecords()
    written = {"eu:0": 10, "eu:1": 4}
    assert correction_step(written, {"eu:0": 10, "eu:1": 3}, adjustments, {"ann": 42, "bob": 7}) == (
        AwaitProjection(frozenset({"eu:1"}))
    )
    assert correction_step(written, {"eu:0": 11, "eu:1": 4}, adjustments, {"ann": 42, "bob": 1}) == (
        AwaitProjection(frozenset(), ("bob",))
    )
    assert (
        correction_step(written, {"eu:0": 10, "eu:1": 4}, adjustments, {"ann": 42, "bob": 7})
        == ArchiveVersion()
    )


def test_a_moderation_version_waits_for_its_record_and_nothing_else() -> None:
    landed = {"eu:3": 17}
    restore_of_a_player_who_never_scored = (("ghost", False),)
    assert correction_step(landed, {"eu:3": 16}, (), {"ghost": None}, restore_of_a_player_who_never_scored) == (
        AwaitProjection(frozenset({"eu:3"}))
    )
    assert correction_step(landed, {"eu:3": 17}, (), {"ghost": None}, restore_of_a_player_who_never_scored) == (
        ArchiveVersion()  # shown with no total: absent, as in the version before
    )
    hidden_again_since = (("bob", False),)  # the restore's record was passed, and a later hide's too
    assert correction_step(landed, {"eu:3": 40}, (), {"bob": None}, hidden_again_since) == ArchiveVersion()
    # A version claimed before where its record landed was recorded: the player as the action asks.
    assert correction_step(None, {}, (), {"bob": None}, (("bob", False),)) == AwaitProjection(frozenset(), ("bob",))
    assert correction_step(None, {}, (), {"bob": 5}, (("bob", False),)) == ArchiveVersion()


def test_subscribers_hear_of_closing_closed_and_every_new_result_version() -> None:
    assert announced_state(BoardStatus.OPEN, None) is None
    states = [announced_state(BoardStatus.CLOSING, None), announced_state(BoardStatus.CLOSED, 1),
              announced_state(BoardStatus.CLOSED, 2)]  # fmt: skip
    assert len(set(states)) == 3


def test_a_closed_board_claims_its_cutoffs_no_further_than_the_projection_reached() -> None:
    assert parse_position_name(position_name("eu-west", 3)) == ("eu-west", 3)
    live = {("eu", 0): 50, ("eu", 1): 9, ("us", 0): 70}
    board = Board(
        "b", "B", "eu", status=BoardStatus.CLOSED, cutoffs=(("eu:0", 12), ("eu:1", 20), ("us:0", 30))
    )
    assert board_positions(board, live) == {("eu", 0): 12, ("eu", 1): 9, ("us", 0): 30}
    assert board_positions(Board("b", "B", "eu", status=BoardStatus.CLOSING), live) == live
