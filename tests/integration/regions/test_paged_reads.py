"""Keyset pages of the Redis projection (real Redis, or a cluster): a walk forwards or backwards
returns each player once, in rank order, with contiguous ranks, on one sorted set and on a sharded
board alike; a page from a rank is the slice of the board's top; a player who moves between two
pages is never twice in one page.
"""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from regions.core.boards import Board, SortOrder, TiePolicy
from regions.core.paging import Page, PageRequest, decode_cursor, encode_cursor, page_entries
from regions.core.reads import RankedEntry
from regions.stores.redis.projection import ProjectedTotal, RedisProjection
from regions.stores.redis.reads import RankReader
from tests.integration.regions.test_sharded_reads import _forget, _totals, players


async def _walk(reader: RankReader, board: Board, size: int, forward: bool) -> list[RankedEntry]:
    seen: list[RankedEntry] = []
    page, _ = await reader.page(board, PageRequest(size, forward))
    while True:
        entries = page_entries(board, page)
        assert [e.rank for e in entries] == list(range(page.first + 1, page.first + 1 + len(entries)))
        seen = seen + entries if forward else entries + seen
        if not (page.has_next if forward else page.has_previous):
            return seen
        row = page.rows[-1] if forward else page.rows[0]
        cursor = decode_cursor(board.id, encode_cursor(board.id, row), "after")
        page, _ = await reader.page(board, PageRequest(size, forward, cursor))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    players,
    st.sampled_from(SortOrder),
    st.sampled_from(TiePolicy),
    st.sampled_from([1, 2, 3, 7]),
    st.integers(1, 9),
    st.data(),
)
async def test_walks_and_jumps_answer_like_the_top_of_one_sorted_set(
    redis_client: Redis,
    found: dict[str, tuple[int, int, int]],
    sort_order: SortOrder,
    tie: TiePolicy,
    shards: int,
    size: int,
    data: st.DataObject,
) -> None:
    prefix = f"pgd{uuid.uuid4().hex[:8]}"
    board = Board("paged", "Paged", "local", sort_order=sort_order, tie_policy=tie, shards=shards)
    projection = RedisProjection(redis_client, prefix)
    reader = RankReader(projection, prefix, "local")
    try:
        await projection.apply(board.id, _totals(board, found), shards)
        top = await reader.top(board, len(found))
        everyone = top.entries

        assert await _walk(reader, board, size, forward=True) == everyone
        assert await _walk(reader, board, size, forward=False) == everyone
        rank = data.draw(st.integers(1, len(found) + 1))
        page, as_of = await reader.page(board, PageRequest(size, True, start=rank - 1))
        assert page_entries(board, page) == everyone[rank - 1 : rank - 1 + size]
        assert (page.first, page.total, as_of.region, as_of.stale) == (
            rank - 1,
            len(found),
            "local",
            top.as_of.stale,
        )
    finally:
        await _forget(redis_client, prefix)


async def test_a_player_who_moves_between_pages_is_seen_once_per_page(redis_client: Redis) -> None:
    prefix = f"pgm{uuid.uuid4().hex[:8]}"
    board = Board("moving", "Moving", "local", shards=3)
    projection = RedisProjection(redis_client, prefix)
    reader = RankReader(projection, prefix, "local")
    found = {f"p{i:02d}": (100 - i, 0, i) for i in range(30)}  # p00 best
    try:
        await projection.apply(board.id, _totals(board, found), 3)
        first, _ = await reader.page(board, PageRequest(10, True))
        assert [e.user_id for e in page_entries(board, first)] == [f"p{i:02d}" for i in range(10)]
        # p03, already seen, falls to 84 (before p16, by user id): the next page starts after p09
        await projection.apply(board.id, [ProjectedTotal("p03", 99, 84, -84.0, "p03")], 3)
        after = decode_cursor(board.id, encode_cursor(board.id, first.rows[-1]), "after")
        second, _ = await reader.page(board, PageRequest(10, True, after))
        users = [e.user_id for e in page_entries(board, second)]
        assert users == ["p10", "p11", "p12", "p13", "p14", "p15", "p03", "p16", "p17", "p18"]
        assert [e.rank for e in page_entries(board, second)] == list(range(10, 20))
        assert second.has_previous and second.has_next
    finally:
        await _forget(redis_client, prefix)


async def test_a_board_without_a_layout_reads_an_empty_page(redis_client: Redis) -> None:
    prefix = f"pge{uuid.uuid4().hex[:8]}"
    reader = RankReader(RedisProjection(redis_client, prefix), prefix, "local")
    page, _ = await reader.page(Board("none", "None", "local", shards=4), PageRequest(5, True, start=9))
    assert page == Page(0, [], 0, False, False)


async def test_a_deep_jump_on_a_sharded_board_is_the_slice_of_its_top(redis_client: Redis) -> None:
    """Deep enough that the jump samples each shard (the ``at`` form) before it reads the page."""
    prefix = f"pgj{uuid.uuid4().hex[:8]}"
    board = Board("deep", "Deep", "local", shards=4)
    projection = RedisProjection(redis_client, prefix)
    reader = RankReader(projection, prefix, "local")
    found = {f"d{i:05d}": (i // 4, 0, i % 3) for i in range(3000)}  # ties of four
    try:
        await projection.apply(board.id, _totals(board, found), 4)
        everyone = (await reader.top(board, len(found))).entries
        for rank, size in ((130, 1), (1500, 50), (2961, 100), (3000, 7), (3001, 7)):
            page, _ = await reader.page(board, PageRequest(size, True, start=rank - 1))
            assert page_entries(board, page) == everyone[rank - 1 : rank - 1 + size]
            assert (page.first, page.total, page.has_next) == (rank - 1, 3000, rank - 1 + size < 3000)
    finally:
        await _forget(redis_client, prefix)
