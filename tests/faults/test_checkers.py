"""The fault schedule's checkers (pure), each shown passing on a good record and failing on a bad one."""

from __future__ import annotations

from regions.core.boards import Board
from tests.faults.checkers import (
    Attempt,
    Copy,
    Refused,
    acked_once,
    check_agreement,
    check_as_of,
    check_close,
    check_exactly_once,
    check_lost,
    fold,
)
from tests.faults.reads import Answer

REGIONS = ["eu", "us"]


def _copy(event: str, digest: str, amount: int, region: str, at: int, offset: int, user: str = "ann") -> Copy:
    return Copy(event, digest, "b", user, f"m-{event}", amount, region, at, 0, offset)


def _attempt(copy: Copy) -> Attempt:
    return Attempt(0, 1, "award", copy.region, copy.board, ((copy.user, copy.match, copy.amount),), 0.0, 0.1, "ok",
                   202, ((copy.region, copy.partition, copy.offset, copy.event_id),))  # fmt: skip


def test_copies_of_one_event_count_once_and_the_earliest_wins() -> None:
    copies = [
        _copy("e1", "d1", 5, "us", 1000, 0),
        _copy("e1", "d2", 7, "eu", 1500, 0),
        _copy("e2", "d3", 1, "eu", 10, 1),
    ]
    expected = fold(copies, horizon_ms=2000)
    assert expected.bounds == {("b", "ann"): (6, 6)}
    assert expected.losers == {("e1", "d2")}
    refused = [Refused("conflicting_repeat", "b", "e1", "d2", "eu")]
    assert not check_exactly_once(expected, {"eu": {("b", "ann"): 6}}, {"eu": refused}, ["b"])
    assert check_exactly_once(expected, {"eu": {("b", "ann"): 13}}, {"eu": refused}, ["b"])  # both copies
    assert check_exactly_once(
        expected, {"eu": {("b", "ann"): 6}}, {"eu": []}, ["b"]
    )  # the loser not reconciled
    winner_refused = [*refused, Refused("conflicting_repeat", "b", "e1", "d1", "us")]
    assert check_exactly_once(expected, {"eu": {("b", "ann"): 6}}, {"eu": winner_refused}, ["b"])


def test_copies_further_apart_than_the_horizon_are_bounded_not_exact() -> None:
    copies = [_copy("e1", "d1", 5, "us", 0, 0), _copy("e1", "d1", 5, "eu", 9000, 0)]
    expected = fold(copies, horizon_ms=2000)
    assert expected.bounds == {("b", "ann"): (5, 10)} and expected.loose == {"e1"}
    refused = {"eu": [Refused("beyond_dedupe_memory", "b", "e1", "d1", "eu")]}
    assert not check_exactly_once(expected, {"eu": {("b", "ann"): 5}}, refused, ["b"])


def test_an_acknowledgement_whose_copy_is_not_where_it_said_is_lost() -> None:
    copy = _copy("e1", "d1", 5, "eu", 0, 3)
    assert not check_lost([_attempt(copy)], [copy])
    assert check_lost([_attempt(copy)], [])


def test_regions_that_rank_differently_disagree() -> None:
    assert not check_agreement({"eu": {"b": [(1, "ann", 3)]}, "us": {"b": [(1, "ann", 3)]}})
    assert check_agreement({"eu": {"b": [(1, "ann", 3)]}, "us": {"b": [(1, "ann", 4)]}})


def test_an_answer_whose_as_of_covers_an_award_it_does_not_show_over_claims() -> None:
    copy = _copy("e1", "d1", 5, "us", 0, 3)
    acked = acked_once([_attempt(copy)], [copy], REGIONS, 2)
    us0 = 1 * 2 + 0  # (us, 0) among eu, us with two partitions
    good = Answer("top", 0.0, 0.1, False, {us0: 3}, {"ann": (5, 1)}, None)
    short = Answer("top", 0.2, 0.3, False, {us0: 3}, {"ann": (4, 1)}, None)
    stale = Answer("top", 0.2, 0.3, True, {us0: 3}, {}, None)
    assert not check_as_of(acked, {"eu:b": [good, stale]})
    assert check_as_of(acked, {"eu:b": [good, short]})


def test_an_archive_beyond_the_cutoffs_is_not_the_oracle() -> None:
    board = Board("b", "B", "eu")
    copies = [_copy("e1", "d1", 5, "eu", 0, 3), _copy("e2", "d2", 2, "us", 0, 9, user="bob")]
    cutoffs = {"eu": {0: 5, 1: 0}, "us": {0: 5, 1: 0}}
    args = (copies, cutoffs, {"e2"}, REGIONS, 2)
    assert not check_close(board, True, [("ann", 5, 1)], *args)
    assert check_close(board, True, [("ann", 5, 1), ("bob", 2, 1)], *args)  # a late award applied
    assert check_close(board, True, [("ann", 5, 1)], copies, cutoffs, set(), REGIONS, 2)  # not reconciled
    assert check_close(board, False, None, *args)
