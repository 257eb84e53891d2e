"""A list of players ranked from each shard's answers equals a brute-force ranking of the board; the
list is ordered by rank, numbered among itself, each id once, players without a score last."""

from __future__ import annotations

import bisect

from hypothesis import given
from hypothesis import strategies as st

from regions.core.boards import Board
from regions.core.player_lists import Found, distinct, listed, ranked

BOARD = Board("b", "B", "local")


@given(
    st.lists(st.integers(-3, 3), min_size=1, max_size=30),
    st.integers(1, 4),
    st.lists(st.integers(0, 3), min_size=30, max_size=30),
    st.lists(st.integers(0, 35), max_size=12),
)
def test_listed_players_have_the_ranks_of_the_whole_board(
    scores: list[int], shards: int, owners: list[int], asked_at: list[int]
) -> None:
    board = sorted((float(s), f"u{i:02d}") for i, s in enumerate(scores))  # Redis order: ascending
    parts = [[e for e, o in zip(board, owners, strict=False) if o % shards == s] for s in range(shards)]
    asked = distinct(f"u{i:02d}" for i in asked_at)
    entries = {}
    for user in asked:
        mine = next((p for p in parts if any(m == user for _, m in p)), None)
        if mine is None:
            continue
        at = next(i for i, (_, m) in enumerate(mine) if m == user)
        score = mine[at][0]
        found = Found(at, user, repr(score), "1", sum(1 for s, _ in mine if s < score))
        counts = [
            (bisect.bisect_left(p, (score, user)), sum(1 for s, _ in p if s < score))
            for p in parts
            if p is not mine
        ]
        entries[user] = ranked(BOARD, found, counts, len(board))

    result = listed(asked, entries)

    on_board = {m: i for i, (_, m) in enumerate(board)}
    scored = sorted((u for u in asked if u in on_board), key=on_board.__getitem__)
    assert [x.user_id for x in result] == [*scored, *(u for u in asked if u not in on_board)]
    for i, x in enumerate(result):
        if x.entry is None:
            assert x.rank_among is None and x.user_id not in on_board
            continue
        score = board[on_board[x.user_id]][0]
        assert (x.rank_among, x.entry.rank) == (i + 1, on_board[x.user_id] + 1)
        assert x.entry.shared_rank == 1 + sum(1 for s, _ in board if s < score)
        assert x.entry.top_percent == 100 * x.entry.rank / len(board)


def test_each_id_is_answered_once_in_the_order_first_given() -> None:
    assert distinct(["b", "a", "b", "c", "a"]) == ["b", "a", "c"]
