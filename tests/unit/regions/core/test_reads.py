"""Shared ranks and topPercent of windows, one shard's and merged across shards, against a brute-force
model of the board: ties (competition ranking: 1, 1, 3), any shard count, windows that start inside a
tie. ``_read`` answers as ``schema/lua/read_window.lua`` does (rows, ``first``, ``above``)."""

from __future__ import annotations

import bisect

from hypothesis import given
from hypothesis import strategies as st

from regions.core.boards import Board, SortOrder, TiePolicy
from regions.core.ordering import REACHED_WIDTH
from regions.core.reads import (
    Row,
    Window,
    entries_of,
    merged_context,
    merged_top,
    row_order,
    shared_ranks,
    top_percent,
)

Entry = tuple[float, str]  # (Redis score, member): ascending is rank order


def _above(shard: list[Entry], first: int, lead: float | None) -> int:
    """The script's count of entries strictly better than the lead (first row, or the placed entry)."""
    if first == 0:
        return 0
    edge = shard[first - 1 : first + 1]
    score = lead if lead is not None else (edge[1][0] if len(edge) > 1 else None)
    if score is not None and edge[0][0] == score:
        return sum(1 for s, _ in shard if s < score)
    return first


def _read(shard: list[Entry], rank: int, first: int, last: int, lead: float | None = None) -> Window:
    rows: list[Row] = [(m, repr(s), "1") for s, m in shard[first : last + 1]]
    return Window(rank, first, len(shard), rows, _above(shard, first, lead))


def _top(shard: list[Entry], k: int) -> Window:
    return _read(shard, -1, 0, k - 1)


def _player(shard: list[Entry], at: int, n: int) -> Window:
    return _read(shard, at, max(0, at - n), at + n)


def _around(shard: list[Entry], entry: Entry, n: int) -> Window:
    rank = bisect.bisect_left(shard, entry)
    first = max(0, rank - n)
    return _read(shard, rank, first, rank + n - 1, entry[0] if first == rank else None)


def _expected(board: list[Entry], rows: list[Row]) -> list[int]:
    return [1 + sum(1 for s, _ in board if s < float(score)) for _, score, _ in rows]


boards = st.lists(st.integers(-3, 3), min_size=1, max_size=40).map(
    lambda scores: sorted((float(s), f"u{i:02d}") for i, s in enumerate(scores))
)


def _sharded(board: list[Entry], owners: list[int], shards: int) -> list[list[Entry]]:
    return [[e for e, o in zip(board, owners, strict=False) if o % shards == s] for s in range(shards)]


@given(boards, st.integers(1, 45), st.integers(0, 45))
def test_a_window_of_one_shard_has_the_shared_ranks_of_the_board(board: list[Entry], n: int, at: int) -> None:
    window = _read(board, -1, at, at + n - 1)
    assert shared_ranks(window) == _expected(board, window.rows)


@given(boards, st.integers(1, 4), st.lists(st.integers(0, 3), min_size=40, max_size=40), st.integers(1, 45))
def test_a_merged_top_has_the_shared_ranks_of_the_board(
    board: list[Entry], shards: int, owners: list[int], k: int
) -> None:
    parts = _sharded(board, owners, shards)
    merged = merged_top([_top(p, k) for p in parts], k)
    assert shared_ranks(merged) == _expected(board, merged.rows)


@given(
    boards,
    st.integers(1, 4),
    st.lists(st.integers(0, 3), min_size=40, max_size=40),
    st.integers(0, 6),
    st.data(),
)
def test_a_merged_context_has_the_shared_ranks_of_the_board(
    board: list[Entry], shards: int, owners: list[int], around: int, data: st.DataObject
) -> None:
    player = data.draw(st.sampled_from(board))
    parts = _sharded(board, owners, shards)
    mine = next(s for s, p in enumerate(parts) if player in p)
    owner = _player(parts[mine], parts[mine].index(player), around)
    others = [_around(p, player, around) for s, p in enumerate(parts) if s != mine]
    merged = merged_context(owner, others, around)
    assert [m for m, _, _ in merged.rows] == [m for _, m in board][
        merged.first : merged.first + len(merged.rows)
    ]
    assert shared_ranks(merged) == _expected(board, merged.rows)


@given(boards, st.sampled_from(SortOrder), st.sampled_from(TiePolicy), st.integers(1, 45))
def test_entries_carry_shared_ranks_and_top_percent_whatever_the_order_and_tie_policy(
    board: list[Entry], order: SortOrder, tie: TiePolicy, k: int
) -> None:
    b = Board("b", "B", "local", sort_order=order, tie_policy=tie)
    strip = "0" * REACHED_WIDTH + "|" if tie is TiePolicy.FIRST_REACHED else ""
    rows: list[Row] = [(strip + m, repr(s), "3") for s, m in board[:k]]
    entries = entries_of(b, Window(-1, 0, len(board), rows, 0))
    totals = [e.score for e in entries]
    for e in entries:
        better = [t for t in totals if (t > e.score if order is SortOrder.DESC else t < e.score)]
        assert e.shared_rank == 1 + len(better)
        assert e.top_percent == 100 * e.rank / len(board)
    assert [e.rank for e in entries] == list(range(1, len(entries) + 1))
    assert sorted(rows, key=row_order) == rows


def test_ties_read_one_one_three() -> None:
    window = Window(-1, 0, 4, [("a", "5", "1"), ("b", "5", "1"), ("c", "7", "1"), ("d", "7", "1")], 0)
    assert shared_ranks(window) == [1, 1, 3, 3]
    assert top_percent(1, 200) == 0.5 and top_percent(200, 200) == 100.0 and top_percent(1, 0) == 0.0
