"""A sharded board answers exactly like an unsharded one on the same data (real Redis, or a cluster).

Top K is a merge of every shard's top K, a player's rank the sum of the entries ranked better in
every shard (counted by (score, member) in each shard's script), and a player's neighbours the
nearest of every shard's neighbours; the property test compares all three with one sorted set, and
their shared ranks (1 + the players with a strictly better score) with a brute-force count.
"""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.asyncio import Redis

from regions.core.boards import Board, SortOrder, TiePolicy
from regions.core.ordering import encode, reached_position
from regions.core.reads import PlayerContext, RankedEntry, shared_ranks
from regions.stores.redis.projection import ProjectedTotal, RedisProjection
from regions.stores.redis.reads import RankReader
from schema.redis_keys import bucket_of

# Few totals, so that equal scores are common and the order among them (user id, or first reached)
# decides; ids whose bytes and code points order alike only if the comparison is done right.
user_ids = st.text(alphabet="abzAZ09_-|é日", min_size=1, max_size=5)
players = st.dictionaries(
    user_ids,
    st.tuples(st.integers(-3, 3), st.integers(0, 3), st.integers(0, 50)),  # total, reached at, offset
    min_size=1,
    max_size=40,
)


def _totals(board: Board, found: dict[str, tuple[int, int, int]]) -> list[ProjectedTotal]:
    totals = []
    for version, (user, (total, at_ms, offset)) in enumerate(found.items(), start=1):
        score, member = encode(
            board.sort_order, board.tie_policy, user, total, reached_position(at_ms, 0, offset)
        )
        totals.append(ProjectedTotal(user, version, total, score, member))
    return totals


def _check_shared(
    entries: list[RankedEntry], found: dict[str, tuple[int, int, int]], order: SortOrder
) -> None:
    """Shared ranks and topPercent against the brute-force model (1 + strictly better scores)."""
    totals = [t for t, _, _ in found.values()]
    for e in entries:
        better = sum(1 for t in totals if (t > e.score if order is SortOrder.DESC else t < e.score))
        assert (e.shared_rank, e.top_percent) == (1 + better, 100 * e.rank / len(found))


def _context(found: PlayerContext | None) -> object:
    return None if found is None else (found.player, found.above, found.below)


async def _forget(redis: Redis, prefix: str) -> None:
    async for key in redis.scan_iter(match=f"{prefix}:*", count=1000):
        await redis.delete(key)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    players,
    st.sampled_from(SortOrder),
    st.sampled_from(TiePolicy),
    st.sampled_from([2, 3, 7]),
    st.integers(1, 45),
    st.integers(0, 6),
    st.data(),
)
async def test_a_sharded_board_answers_top_player_and_context_like_one_sorted_set(
    redis_client: Redis,
    found: dict[str, tuple[int, int, int]],
    sort_order: SortOrder,
    tie: TiePolicy,
    shards: int,
    k: int,
    around: int,
    data: st.DataObject,
) -> None:
    prefix = f"shd{uuid.uuid4().hex[:8]}"
    one = Board("one", "One sorted set", "local", sort_order=sort_order, tie_policy=tie)
    many = Board("many", "Sharded", "local", sort_order=sort_order, tie_policy=tie, shards=shards)
    projection = RedisProjection(redis_client, prefix)
    reader = RankReader(projection, prefix, "local")
    try:
        await projection.apply(one.id, _totals(one, found))
        await projection.apply(many.id, _totals(many, found), shards)
        layout = await projection.layouts.live_one(many.id)
        assert layout is not None and layout.shards == shards

        top = (await reader.top(one, k)).entries
        assert (await reader.top(many, k)).entries == top
        _check_shared(top, found, sort_order)
        assert await reader.player_count(many) == await reader.player_count(one) == len(found)
        asked = [*data.draw(st.lists(st.sampled_from(sorted(found)), min_size=1, max_size=4)), "nobody-here"]
        for user in asked:
            assert (await reader.player(many, user))[0] == (await reader.player(one, user))[0]
            context = await reader.context(one, user, around)
            assert _context(await reader.context(many, user, around)) == _context(context)
            if context is not None:
                _check_shared([*context.above, context.player, *context.below], found, sort_order)
        _, top_one, ranks_one = await reader.windows(one, asked, k)
        _, top_many, ranks_many = await reader.windows(many, asked, k)
        assert (top_many.rows, top_many.count) == (top_one.rows, top_one.count)
        assert [(w.rank, w.rows, shared_ranks(w)) if w else None for w in ranks_many] == [
            (w.rank, w.rows, shared_ranks(w)) if w else None for w in ranks_one
        ]
        rows_one = [r async for part in reader.ranked_rows(one, 7) for r in part]
        assert [r async for part in reader.ranked_rows(many, 7) for r in part] == rows_one
    finally:
        await _forget(redis_client, prefix)


async def test_python_and_lua_put_a_player_in_the_same_version_bucket(redis_client: Redis) -> None:
    users = ["a", "ann", "é", "日本", "x|y", "p" * 128, "s00000001"]
    script = redis_client.register_script("return string.sub(redis.sha1hex(ARGV[1]), 1, 4)")

    in_lua = [await script(keys=["{bucket-check}"], args=[user]) for user in users]

    assert in_lua == [bucket_of(user) for user in users]
    assert len(set(in_lua)) == len(users)  # (different ids: a check that could fail)
