"""The jump to a rank of a sharded board against a reference model (one sorted list of the board,
spread over shards by the projection's own hash): the page is the model's slice, whatever the
ties; two rounds as a rule on an evenly hashed board, a few more on a skewed one; a board that moves
between the rounds still gets the slice of the board as the page read saw it."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from regions.core.paging import PageRequest
from regions.core.rank_jump import RankJump
from regions.core.reads import Row, Window, row_order
from regions.stores.redis.pages import Form, read_page
from schema.redis_keys import shard_of
from tests.unit.regions.core.test_paging import Shards


class Still(Shards):
    """Shards whose lists are never changed in place: each one's order is worked out once."""

    def __init__(self, shards: list[list[Row]]) -> None:
        super().__init__(shards)
        self._keys: dict[int, tuple[list[Row], list[tuple[float, str]]]] = {}

    def keys(self, rows: list[Row]) -> list[tuple[float, str]]:
        cached = self._keys.get(id(rows))
        if cached is None or cached[0] is not rows:
            cached = self._keys[id(rows)] = (rows, super().keys(rows))
        return cached[1]


def _board(players: int, scores: int, shards: int, seed: int) -> tuple[Still, list[Row]]:
    """``players`` with scores drawn from ``scores`` values (ties when fewer), hashed over shards."""
    rng = random.Random(seed)
    rows: list[Row] = [(f"p{i:07d}", str(rng.randrange(scores)), "1", None) for i in range(players)]
    spread: list[list[Row]] = [[] for _ in range(shards)]
    for row in rows:
        spread[shard_of(row[0], shards)].append(row)
    return Still(spread), sorted(rows, key=row_order)


def _jump(shards: Shards, count: int, start: int, size: int) -> tuple[list[Row], int, int]:
    shards.rounds = 0
    page = asyncio.run(read_page(shards.read, count, PageRequest(size, True, start=start)))
    return page.rows, page.first, shards.rounds


@settings(max_examples=120, deadline=None)
@given(
    st.integers(1, 4000),
    st.sampled_from([1, 3, 50, 10**6]),
    st.integers(2, 5),
    st.integers(1, 100),
    st.floats(0, 1.01),
    st.integers(0, 2**16),
)
def test_a_jump_is_the_slice_of_the_board_in_few_rounds(
    players: int, scores: int, count: int, size: int, depth: float, seed: int
) -> None:
    shards, model = _board(players, scores, count, seed)
    start = int(players * depth)
    rows, first, rounds = _jump(shards, count, start, size)
    assert (first, rows) == (start, model[start : start + size])
    assert rounds <= RankJump.ROUNDS + 1  # sampling and the page read: no search by position


def test_a_deep_rank_of_an_evenly_hashed_board_takes_two_rounds_as_a_rule() -> None:
    rounds: Counter[int] = Counter()
    for seed, (scores, count) in enumerate([(10**9, 4), (60_000, 4), (40, 4), (10**9, 3), (7, 5)]):
        shards, model = _board(100_000, scores, count, seed)
        rng = random.Random(seed)
        for _ in range(60):
            start, size = rng.randrange(128, 100_000), rng.choice([1, 10, 100])
            rows, first, took = _jump(shards, count, start, size)
            assert (first, rows) == (start, model[start : start + size])
            rounds[took] += 1
    assert max(rounds) <= 3, rounds
    assert rounds[2] >= 0.95 * sum(rounds.values()), rounds


def test_a_shallow_rank_takes_one_round() -> None:
    shards, model = _board(5000, 100, 4, 1)
    for start in (1, 27, 99):
        rows, first, took = _jump(shards, 4, start, 10)
        assert (first, rows, took) == (start, model[start : start + 10], 1)


def test_a_skewed_board_is_found_in_more_sampling_rounds() -> None:
    rows: list[Row] = [(f"u{i:05d}", str(i), "1", None) for i in range(40_000)]
    shards = Still([rows[:30_000], rows[30_000:39_900], rows[39_900:]])  # whole rank ranges each
    for start in (150, 29_999, 30_000, 35_000, 39_899, 39_950, 39_999, 40_000):
        page, first, took = _jump(shards, 3, start, 7)
        assert (first, page) == (start, rows[start : start + 7])
        assert took <= RankJump.ROUNDS + 1


class Moving(Still):
    """Shards whose board gains ``gained`` entries ranked first in shard 0 after the first round."""

    def __init__(self, shards: list[list[Row]], gained: list[Row]) -> None:
        super().__init__(shards)
        self.gained = gained

    async def read(self, forms: Sequence[tuple[int, Form]]) -> list[Window]:
        windows = await super().read(forms)
        if self.rounds == 1:
            self.shards[0] = sorted(self.shards[0] + self.gained, key=row_order)
        return windows


def test_a_board_that_moves_between_the_rounds_gets_the_slice_the_page_read_saw() -> None:
    for gained_count in (1, 40, 400):
        start, model = _board(50_000, 10**9, 4, 3)
        gained: list[Row] = [(f"n{i:05d}", str(-1 - i), "1", None) for i in range(gained_count)]
        shards = Moving(start.shards, gained)
        rows, first, _ = _jump(shards, 4, 20_000, 100)
        after = sorted(model + gained, key=row_order)
        assert (first, rows) == (20_000, after[20_000:20_100])
