"""Property: the real Redis orders a board exactly as the core's rank order, for both tie policies."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from regions.core.boards import Board, SortOrder, TiePolicy
from regions.core.ordering import encode, rank_key, reached_position
from regions.stores.redis.projection import ProjectedTotal, RedisProjection
from regions.stores.redis.reads import RankReader

users = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=8
)
entries = st.dictionaries(
    users,
    st.tuples(
        st.integers(-5, 5) | st.integers(-(2**53) + 1, 2**53 - 1), st.integers(0, 2**40), st.integers(0, 50)
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries, st.sampled_from(SortOrder), st.sampled_from(TiePolicy))
async def test_real_redis_ranks_like_the_core(
    redis_client: Redis, players: dict[str, tuple[int, int, int]], sort_order: SortOrder, tie: TiePolicy
) -> None:
    prefix = f"ord{uuid.uuid4().hex[:8]}"
    board = Board("prop", "Property", "local", sort_order=sort_order, tie_policy=tie)
    projection = RedisProjection(redis_client, prefix)
    totals, expected = [], []
    for user, (total, at_ms, offset) in players.items():
        reached = reached_position(at_ms, 0, offset)
        score, member = encode(sort_order, tie, user, total, reached)
        totals.append(ProjectedTotal(user, 1, total, score, member))
        expected.append((rank_key(sort_order, tie, user, total, reached), user, total))
    await projection.apply(board.id, totals)

    page = await RankReader(projection, prefix, "local").top(board, len(players))

    assert [(e.user_id, e.score) for e in page.entries] == [(u, t) for _, u, t in sorted(expected)]
    assert [e.rank for e in page.entries] == list(range(1, len(players) + 1))
    async for key in redis_client.scan_iter(match=f"{prefix}:*", count=1000):
        await redis_client.delete(key)
