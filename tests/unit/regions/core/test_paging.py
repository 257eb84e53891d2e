"""Keyset pages against a reference model: one sorted list of the board, its players spread over
any number of shards, each shard answering read_window's forms as the script does.

A walk forwards or backwards, at any page size, returns each player once with contiguous ranks; a
page from a rank is that slice of the model; the request's rules name the argument they refuse.
"""

from __future__ import annotations

import asyncio
import bisect
import zlib
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regions.core.boards import Board, SortOrder, TiePolicy
from regions.core.ordering import encode, reached_position
from regions.core.paging import (
    Page,
    PageRequest,
    PagingError,
    Position,
    RankSearch,
    decode_cursor,
    encode_cursor,
    page_entries,
    page_request,
    share_of,
)
from regions.core.reads import Row, Window, row_order
from regions.stores.redis.pages import Form, read_page

user_ids = st.text(alphabet="abzAZ09_-|é日", min_size=1, max_size=5)
players = st.dictionaries(
    user_ids,
    st.tuples(st.integers(-3, 3), st.integers(0, 3), st.integers(0, 9)),  # total, reached at, offset
    max_size=60,
)


def _hash(member: str) -> int:
    return zlib.crc32(member.encode())


def _score(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)  # as Redis writes it


class Shards:
    """read_window's forms on in-memory shards (rows in Redis order); ``reads`` counts the rounds."""

    def __init__(self, shards: list[list[Row]]) -> None:
        self.shards = [sorted(rows, key=row_order) for rows in shards]
        self.rounds = 0

    async def read(self, forms: Sequence[tuple[int, Form]]) -> list[Window]:
        self.rounds += 1
        return [self._form(self.shards[s], *form) for s, form in forms]

    def keys(self, rows: list[Row]) -> list[tuple[float, str]]:
        return [row_order(r) for r in rows]

    def _form(self, rows: list[Row], name: str | int, *args: str | int) -> Window:
        keys, count = self.keys(rows), len(rows)

        def window(rank: int, first: int, last: int, lead: float | None = None) -> Window:
            """As the script's common block: ``above`` from the entry before the window."""
            above, first = 0, max(0, first)
            if first > 0:
                score = lead if lead is not None else (keys[first][0] if first < count else None)
                tied = score is not None and keys[first - 1][0] == score
                above = sum(1 for k in keys if k[0] < score) if tied else first
            return Window(rank, first, count, rows[first : max(first, last + 1)], above)

        if name == "at":  # the entries at the indices, without version or metadata
            found = [(rows[i][0], rows[i][1], None, None) for i in map(int, args) if i < count]
            return Window(-1, 0, count, found, 0)
        if name == "slice":
            first, n = int(args[0]), int(args[1])
            return window(-1, first, first + n - 1)
        if name == "bottom":
            n = int(args[0])
            return window(count, count - n, count - 1)
        score, member, n = float(args[0]), str(args[1]), int(args[2])
        rank = bisect.bisect_left(keys, (score, member))
        if name == "around":
            return window(rank, rank - n, rank + n - 1, score if max(0, rank - n) == rank else None)
        if name == "from":
            return window(rank, rank, rank + n - 1, score)
        if name == "before":
            return window(rank, rank - n, rank - 1)
        assert name == "after"
        if rank < count and keys[rank] == (score, member):
            rank += 1
        return window(rank, rank, rank + n - 1, score)


def _board(
    found: dict[str, tuple[int, int, int]], order: SortOrder, tie: TiePolicy, shards: int
) -> tuple[Board, Shards, list[Row]]:
    board = Board("b", "B", "local", sort_order=order, tie_policy=tie, shards=shards)
    rows: list[Row] = []
    for version, (user, (total, at, offset)) in enumerate(found.items(), start=1):
        score, member = encode(order, tie, user, total, reached_position(at, 0, offset))
        rows.append((member, _score(score), str(version), None))
    spread: list[list[Row]] = [[] for _ in range(shards)]
    for i, row in enumerate(rows):
        spread[_hash(row[0]) % shards if i % 3 else i % shards].append(row)
    return board, Shards(spread), sorted(rows, key=row_order)


def _read(shards: Shards, count: int, request: PageRequest) -> Page:
    return asyncio.run(read_page(shards.read, count, request))


def _request(board: Board, **arguments: object) -> PageRequest:
    args = {"first": None, "after": None, "last": None, "before": None, "from_rank": None, **arguments}
    return page_request(board.id, cap=100, **args)  # type: ignore[arg-type]


def _check(board: Board, page: Page, model: list[Row]) -> None:
    """The page is the model's slice from its first rank, with contiguous ranks."""
    assert page.rows == model[page.first : page.first + len(page.rows)]
    shared = [1 + sum(1 for m in model if float(m[1]) < float(row[1])) for row in page.rows]
    assert [e.shared_rank for e in page_entries(board, page)] == shared
    assert [e.rank for e in page_entries(board, page)] == list(
        range(page.first + 1, page.first + 1 + len(page.rows))
    )
    assert page.total == len(model)
    assert page.has_previous == (min(page.first, len(model)) > 0)
    assert page.has_next == (page.first + len(page.rows) < len(model))


boards = st.tuples(players, st.sampled_from(SortOrder), st.sampled_from(TiePolicy), st.integers(1, 5))


@settings(max_examples=150, deadline=None)
@given(boards, st.integers(1, 12))
def test_a_walk_forwards_and_backwards_returns_every_player_once_in_rank_order(
    spec: tuple[dict[str, tuple[int, int, int]], SortOrder, TiePolicy, int], size: int
) -> None:
    board, shards, model = _board(*spec)
    seen: list[Row] = []
    page = _read(shards, board.shards, _request(board, first=size))
    while True:
        _check(board, page, model)
        assert page.first == len(seen)
        seen += page.rows
        if not page.has_next:
            break
        after = encode_cursor(board.id, page.rows[-1])
        page = _read(shards, board.shards, _request(board, first=size, after=after))
    assert seen == model
    back: list[Row] = []
    page = _read(shards, board.shards, _request(board, last=size))
    while True:
        _check(board, page, model)
        back = page.rows + back
        if not page.has_previous:
            break
        before = encode_cursor(board.id, page.rows[0])
        page = _read(shards, board.shards, _request(board, last=size, before=before))
    assert back == model


@settings(max_examples=200, deadline=None)
@given(boards, st.integers(1, 12), st.data())
def test_a_page_from_a_rank_is_that_slice_of_the_board(
    spec: tuple[dict[str, tuple[int, int, int]], SortOrder, TiePolicy, int], size: int, data: st.DataObject
) -> None:
    board, shards, model = _board(*spec)
    rank = data.draw(st.integers(1, len(model) + 2))
    page = _read(shards, board.shards, _request(board, first=size, from_rank=rank))
    _check(board, page, model)
    assert page.first == rank - 1
    assert page.rows == model[rank - 1 : rank - 1 + size]


def test_a_deep_rank_of_a_sharded_board_is_found_in_few_rounds() -> None:
    rows = [(f"u{i:07d}", str(i // 3), "1") for i in range(200_000)]  # ties of three
    spread: list[list[Row]] = [[] for _ in range(4)]
    for row in rows:
        spread[_hash(row[0]) % 4].append(row)
    shards = Shards(spread)
    page = _read(shards, 4, PageRequest(100, True, start=123_457))
    assert page.first == 123_457
    assert page.rows == sorted(rows, key=row_order)[123_457:123_557]
    assert shards.rounds <= 2 * RankSearch.INTERPOLATED + 3, shards.rounds  # interpolation, no bisection


def test_a_skewed_spread_is_still_found_by_bisection() -> None:
    rows = [(f"u{i:05d}", str(i), "1") for i in range(4000)]
    shards = Shards([rows[:3000], rows[3000:3990], rows[3990:]])  # shards hold whole rank ranges
    for start in (0, 1, 2999, 3000, 3500, 3989, 3995, 3999, 4000):
        page = _read(shards, 3, PageRequest(7, True, start=start))
        assert (page.first, page.rows) == (start, rows[start : start + 7])


def test_each_shard_gives_its_share_of_a_page_and_the_page_is_read_whole_only_when_a_share_falls_short() -> None:
    rows = [(f"u{i:05d}", str(i), "1") for i in range(2000)]
    spread: list[list[Row]] = [[] for _ in range(4)]
    for row in rows:
        spread[_hash(row[0]) % 4].append(row)
    assert share_of(100, 4) < 100 and share_of(100, 1) == 100
    cursor = Position(rows[999][1], rows[999][0])
    pages = [
        (PageRequest(100, True), rows[:100]),
        (PageRequest(100, True, cursor), rows[1000:1100]),
        (PageRequest(100, False), rows[-100:]),
        (PageRequest(100, False, cursor), rows[899:999]),
    ]
    even = Shards(spread)
    for request, expected in pages:
        before = even.rounds
        assert _read(even, 4, request).rows == expected
        assert even.rounds - before == 1  # players spread by a hash: every share was enough
    # Every row a page shows is in one shard: its share falls short, so the page is read whole.
    skewed = Shards([rows[:1000], rows[1000:1500], rows[1500:1800], rows[1800:]])
    for request, expected in pages:
        before = skewed.rounds
        assert _read(skewed, 4, request).rows == expected
        assert skewed.rounds - before == 2


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 40), st.integers(1, 5), st.integers(1, 7), st.data())
def test_a_player_who_moves_during_a_walk_is_seen_at_most_twice_and_never_twice_in_a_page(
    count: int, shards: int, size: int, data: st.DataObject
) -> None:
    rows = [(f"u{i:03d}", str(i), "1") for i in range(count)]
    model = Shards([[r for r in rows if _hash(r[0]) % shards == s] for s in range(shards)])
    mover = data.draw(st.sampled_from(rows))
    seen: list[str] = []
    moves = data.draw(st.integers(0, count // size))  # the page after which the mover takes another score
    page = _read(model, shards, PageRequest(size, True))
    while True:
        assert len({r[0] for r in page.rows}) == len(page.rows)
        seen += [r[0] for r in page.rows]
        if not page.has_next:
            break
        moves -= 1
        if moves == 0:
            moved = (mover[0], str(data.draw(st.integers(-1, count))) + ".5", "2")
            for shard in model.shards:
                if any(r[0] == mover[0] for r in shard):
                    shard[:] = sorted([r for r in shard if r[0] != mover[0]] + [moved], key=row_order)
        page = _read(
            model,
            shards,
            PageRequest(size, True, decode_cursor("b", encode_cursor("b", page.rows[-1]), "after")),
        )
    assert sorted(u for u in seen if u != mover[0]) == [r[0] for r in rows if r[0] != mover[0]]
    assert seen.count(mover[0]) <= 2


def test_cursors_are_bound_to_their_board_and_refused_when_they_do_not_decode() -> None:
    cursor = encode_cursor("b@2026-12-02", ("z|日本", "-12", "3"))
    assert decode_cursor("b@2026-12-02", cursor, "after").member == "z|日本"
    with pytest.raises(PagingError, match="after: the cursor was read from 'b@2026-12-02'") as refused:
        decode_cursor("b@2026-12-01", cursor, "after")
    assert refused.value.argument == "after"
    for bad in (
        "",
        "%%%",
        "bm90IGpzb24",
        encode_cursor("b", ("m", "(5", "1")),
        encode_cursor("b", ("", "1", "1")),
    ):
        with pytest.raises(PagingError, match=r"^before: not a cursor"):
            decode_cursor("b", bad, "before")


@pytest.mark.parametrize(
    ("arguments", "argument", "rule", "limit"),
    [
        ({"first": 3, "last": 3}, "first", "cannot be given with last", False),
        ({"after": "x", "before": "y"}, "after", "cannot be given with before", False),
        ({"from_rank": 3, "after": "x"}, "fromRank", "cannot be given with after", False),
        ({"from_rank": 3, "before": "x"}, "fromRank", "cannot be given with before", False),
        ({"last": 3, "after": "x"}, "last", "cannot be given with after", False),
        ({"first": 3, "before": "x"}, "first", "cannot be given with before", False),
        ({"from_rank": 3, "last": 3}, "fromRank", "cannot be given with last", False),
        ({"first": 0}, "first", "must be 1 or more, got 0", False),
        ({"last": -2}, "last", "must be 1 or more, got -2", False),
        ({"from_rank": 0}, "fromRank", "must be 1 or more, got 0", False),
        ({"first": 101}, "first", "must be between 1 and 100, got 101", True),
        ({"last": 500}, "last", "must be between 1 and 100, got 500", True),
        ({"after": "x"}, "after", "not a cursor", False),
    ],
)
def test_each_broken_rule_names_its_argument(
    arguments: dict[str, object], argument: str, rule: str, limit: bool
) -> None:
    board = Board("b", "B", "local")
    with pytest.raises(PagingError) as refused:
        _request(board, **arguments)
    assert (refused.value.argument, refused.value.limit) == (argument, limit)
    assert str(refused.value).startswith(f"{argument}: {rule}")


def test_the_default_page_is_a_hundred_and_follows_the_direction() -> None:
    board = Board("b", "B", "local")
    assert _request(board) == PageRequest(100, True)
    assert page_request("b", None, None, None, None, None, cap=20).size == 20
    cursor = encode_cursor("b", ("m", "1", "1"))
    assert _request(board, before=cursor) == PageRequest(100, False, decode_cursor("b", cursor, "before"))
    assert _request(board, from_rank=7, first=5) == PageRequest(5, True, start=6)
