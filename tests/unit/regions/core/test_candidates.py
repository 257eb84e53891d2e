"""Approximate boards' settings, copies of one award, and the candidate list."""

from __future__ import annotations

import pytest

from regions.core.approximate import (
    ApproximateSpec,
    InvalidApproximate,
    decode_approximate,
    encode_approximate,
)
from regions.core.boards import Aggregation, Board, InvalidBoardError, SortOrder, TiePolicy
from regions.core.candidates import CandidateList, Candidates, changes, ranked


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
        candidates.offer(item, estimate)
    # d (2) went for f; of equal estimates the larger id ranks worse
    assert ranked(candidates.items, 3) == (("a", 9), ("b", 5), ("c", 5))
    before = CandidateList(1, 20, (("a", 4), ("b", 5), ("x", 3)))
    assert changes(before, ranked(candidates.items, 3)) == ([("a", 9), ("c", 5)], ["x"])


def test_a_heavy_item_seen_late_still_joins() -> None:
    candidates = Candidates.of(CandidateList(), 2)
    for i in range(1000):
        candidates.offer(f"i{i}", i % 7)
    candidates.offer("heavy", 100)
    assert ranked(candidates.items, 1) == (("heavy", 100),)
