"""The rules of ``?wait=applied``: the query's parsing, coverage of an award, the changed rule."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from regions.core.boards import Board, counted_board_id
from regions.core.periods import Period, WindowSpec, utc_ms
from regions.core.reads import AsOf, RankedEntry
from regions.core.validation import FieldError, Invalid
from regions.core.waits import MAX_TIMEOUT_MS, Applied, AppliedWait, applied_of, changed, covers, parse_wait


def test_no_wait_is_the_plain_path() -> None:
    assert parse_wait([]) is None
    assert parse_wait([("other", "x")]) is None


def test_wait_applied_takes_a_timeout_up_to_the_most() -> None:
    assert parse_wait([("wait", "applied"), ("timeoutMs", "250")]) == AppliedWait(250)
    assert parse_wait([("wait", "applied"), ("timeoutMs", str(MAX_TIMEOUT_MS))]) == AppliedWait(
        MAX_TIMEOUT_MS
    )
    assert parse_wait([("wait", "applied"), ("timeoutMs", "1")]) == AppliedWait(1)
    assert parse_wait([("wait", "applied")]) == AppliedWait(MAX_TIMEOUT_MS)


def _errors(query: list[tuple[str, str]]) -> list[FieldError]:
    parsed = parse_wait(query)
    assert isinstance(parsed, Invalid), parsed
    return list(parsed.errors)


@pytest.mark.parametrize("value", ["2001", "0", "-5", "1.5", "1e3", " 10", "", "abc", "٣", "9" * 5000])
def test_a_bad_or_over_limit_timeout_is_named_with_its_rule(value: str) -> None:
    assert _errors([("wait", "applied"), ("timeoutMs", value)]) == [
        FieldError("timeoutMs", f"must be an integer of milliseconds, 1..{MAX_TIMEOUT_MS}")
    ]


@pytest.mark.parametrize("value", ["", "Applied", "projected", "applied "])
def test_another_wait_is_named_with_its_rule(value: str) -> None:
    assert _errors([("wait", value)]) == [FieldError("wait", "must be 'applied'")]


def test_a_timeout_without_a_wait_and_repeated_parameters_are_refused() -> None:
    assert _errors([("timeoutMs", "100")]) == [FieldError("timeoutMs", "is taken only with wait=applied")]
    assert _errors([("wait", "applied"), ("wait", "applied")]) == [
        FieldError("wait", "must be given at most once")
    ]
    assert [e.field for e in _errors([("wait", "x"), ("wait", "applied"), ("timeoutMs", "5000")])] == [
        "wait", "wait", "timeoutMs",
    ]  # fmt: skip


def _as_of(positions: dict[tuple[str, int], int], *, stale: bool = False) -> AsOf:
    return AsOf("eu", positions, None, stale)


def test_an_award_is_covered_from_its_own_offset_in_its_own_region_and_partition() -> None:
    as_of = _as_of({("eu", 0): 10, ("us", 1): 99})
    assert covers(as_of, ("eu", 0), 10) and covers(as_of, ("eu", 0), 3)
    assert not covers(as_of, ("eu", 0), 11)
    assert not covers(as_of, ("eu", 1), 0)  # a partition the projection has not reached
    assert not covers(as_of, ("us", 0), 0)


def test_a_stale_projection_covers_nothing() -> None:
    assert not covers(_as_of({("eu", 0): 10}, stale=True), ("eu", 0), 1)


def _entry(score: int, version: int, rank: int = 1) -> RankedEntry:
    return RankedEntry(rank, "ann", score, version, shared_rank=max(1, rank - 1), top_percent=50.0)


def test_a_first_score_is_a_change() -> None:
    assert changed(None, _entry(5, 1))


def test_a_best_of_award_that_does_not_beat_the_best_steps_the_version_but_changes_nothing() -> None:
    assert not changed(_entry(10, 1), _entry(10, 2, rank=3))


def test_a_repeat_moves_nothing_and_changes_nothing() -> None:
    assert not changed(_entry(10, 1), _entry(10, 1))


def test_a_new_score_with_a_new_version_is_a_change() -> None:
    assert changed(_entry(10, 1), _entry(13, 2))


@given(st.integers(-(2**53) + 1, 2**53 - 1), st.integers(1, 2**40), st.integers(0, 3), st.integers(0, 5))
def test_changed_means_the_entry_moved(score: int, version: int, step: int, more: int) -> None:
    before, after = _entry(score, version), _entry(score + more, version + step)
    assert changed(before, after) == (step > 0 and more > 0)


def test_applied_is_the_entry_after_with_the_changed_rule() -> None:
    assert applied_of(_entry(10, 1), _entry(12, 2, rank=4)) == Applied(12, 4, 3, True)
    assert applied_of(_entry(10, 1), _entry(10, 2, rank=4)).encoded() == {  # type: ignore[union-attr]
        "score": 10, "rank": 4, "sharedRank": 3, "changed": False,
    }  # fmt: skip
    assert applied_of(_entry(10, 1), None) is None  # covered, but the award left no score (reconciled)


def test_an_award_counts_in_its_calendar_period_and_in_the_board_itself_otherwise() -> None:
    at = utc_ms(datetime(2026, 11, 30, 12, tzinfo=UTC))
    daily = WindowSpec(Period.DAILY)
    assert counted_board_id("b", daily, at) == "b@2026-11-30"
    assert counted_board_id("b", None, at) == "b"
    assert counted_board_id("b", WindowSpec(Period.ROLLING, days=7), at) == "b"
    board = Board("b", "B", "eu", window="daily")
    assert board.counting(at).id == "b@2026-11-30" and board.counting(at).window == "daily"
    plain = Board("p", "P", "eu")
    assert plain.counting(at) is plain
