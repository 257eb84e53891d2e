"""Board generations stay in bounded memory, and forgetting a board never lets a cached answer read
before its board's last change match again (checked against an unbounded reference model)."""

from __future__ import annotations

from typing import cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.core.generations import BoardGenerations
from gateway.projections import Projections
from regions.core.boards import Board
from regions.core.reads import AsOf, RankPage, Scope
from regions.stores.redis.reads import RankReader

BOARDS = st.sampled_from([f"b{i}" for i in range(8)])
STEPS = st.lists(st.tuples(st.sampled_from(["changed", "read"]), BOARDS), max_size=200)


@given(max_boards=st.integers(1, 4), steps=STEPS)
def test_an_answer_matches_exactly_while_its_board_has_not_changed(
    max_boards: int, steps: list[tuple[str, str]]
) -> None:
    generations = BoardGenerations(max_boards)
    changes: dict[str, int] = {}  # the reference: every board's number of changes, never forgotten
    answers: list[tuple[str, int, int]] = []  # (board, generation, changes) when read
    for step, board in steps:
        if step == "changed":
            generations.changed(board)
            changes[board] = changes.get(board, 0) + 1
        else:
            answers.append((board, generations.of(board), changes.get(board, 0)))
        assert len(generations) <= max_boards
        for read, generation, seen in answers:
            if changes.get(read, 0) != seen:  # changed since it was read: never reused
                assert generations.of(read) != generation


def test_memory_is_bounded_however_many_boards_change() -> None:
    generations = BoardGenerations(max_boards=100)
    for day in range(10_000):
        generations.changed(f"daily:{day}")
    assert len(generations) == 100


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="max_boards 0"):
        BoardGenerations(0)


class CountingReader:
    """Answers top() with a page that says how many reads it has served."""

    def __init__(self) -> None:
        self.reads = 0

    async def top(self, board: Board, k: int) -> RankPage:
        self.reads += 1
        return RankPage([], AsOf("eu", {("eu", 0): self.reads}, None, False))


async def test_projections_keep_a_bounded_number_of_boards_and_never_serve_a_page_older_than_a_hint() -> None:
    reader = CountingReader()
    projections = Projections("eu", cast(RankReader, reader), 60.0, max_changed_boards=50)
    board = Board("hot", "Hot", "eu")
    await projections.top(board, 10, Scope.HOME)
    projections.changed("hot")
    for day in range(1_000):  # a period board a day, for years
        projections.changed(f"daily:{day}")
    assert len(projections._generations) == 50
    await projections.top(board, 10, Scope.HOME)
    assert reader.reads == 2, "the page read before the hint was served again"
    await projections.top(board, 10, Scope.HOME)
    assert reader.reads == 2, "a page read after the last hint is reused"
