"""Award metadata in the projection, on the real Redis (one server or the cluster): versioned with
the score, read in the same atomic read as the rank, and no keys at all for players without any."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis

from regions.core.boards import Board, TiePolicy
from regions.core.ordering import encode, reached_position
from regions.runtime.settings import Settings
from regions.stores.redis.projection import ProjectedTotal, RedisProjection
from regions.stores.redis.reads import RankReader
from schema.redis_keys import shard_of


@pytest.mark.parametrize(
    ("tie", "shards"), [(TiePolicy.USER_ID, 1), (TiePolicy.FIRST_REACHED, 1), (TiePolicy.USER_ID, 3)]
)
async def test_metadata_follows_the_newest_version_and_an_older_one_never_overwrites_it(
    settings: Settings, redis_client: Redis, tie: TiePolicy, shards: int
) -> None:
    prefix = settings.redis.key_prefix
    projection = RedisProjection(redis_client, prefix)
    board = Board(f"metadata-{tie.value.lower()}-{shards}", "m", "local", tie_policy=tie, shards=shards)
    reader = RankReader(projection, prefix, "local")

    def total(user: str, version: int, points: int, metadata: str = "") -> ProjectedTotal:
        score, member = encode(board.sort_order, tie, user, points, reached_position(version, 0, 0))
        return ProjectedTotal(user, version, points, score, member, metadata)

    async def shown() -> dict[str, str | None]:
        return {e.user_id: e.metadata for e in (await reader.top(board, 10)).entries}

    await projection.apply(board.id, [total("ann", 2, 7, '{"map":"a"}'), total("bob", 1, 5)], shards)
    assert await shown() == {"ann": '{"map":"a"}', "bob": None}

    older = await projection.apply(board.id, [total("ann", 1, 9, '{"map":"old"}')])
    assert older.users == [] and await shown() == {"ann": '{"map":"a"}', "bob": None}

    await projection.apply(board.id, [total("ann", 3, 8, '{"map":"b"}'), total("bob", 2, 6, '{"b":1}')])
    player, _ = await reader.player(board, "bob")
    assert player is not None and player.metadata == '{"b":1}'
    context = await reader.context(board, "bob", 1)
    assert context is not None and [e.metadata for e in (*context.above, context.player)] == ['{"map":"b"}', '{"b":1}']

    removed = await projection.apply(board.id, [total("ann", 4, 8)])  # a newer version without any
    assert removed.users == ["ann"] and await shown() == {"ann": None, "bob": '{"b":1}'}
    layout = await projection.layouts.live_one(board.id)
    assert layout is not None
    keys = layout.shard(prefix, shard_of("ann", layout.shards))
    assert await redis_client.hexists(keys.note_bucket("ann"), "ann") == 0
    assert await redis_client.hget(keys.note_bucket("bob"), "bob") in (None, '{"b":1}')


async def test_a_board_without_metadata_has_no_metadata_keys(settings: Settings, redis_client: Redis) -> None:
    prefix = settings.redis.key_prefix
    projection = RedisProjection(redis_client, prefix)
    board = Board("metadata-none", "m", "local")
    users = [f"u{i}" for i in range(200)]
    await projection.apply(board.id, [ProjectedTotal(u, 1, i, -float(i), u) for i, u in enumerate(users)])
    layout = await projection.layouts.live_one(board.id)
    assert layout is not None
    keys = layout.shard(prefix, 0)
    assert sum([await redis_client.exists(keys.note_bucket(u)) for u in users]) == 0
    assert sum([await redis_client.exists(keys.bucket(u)) for u in users]) == len(users)
    assert {e.metadata for e in (await RankReader(projection, prefix, "local").top(board, 200)).entries} == {None}
