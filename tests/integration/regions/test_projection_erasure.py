"""An erased player's tombstones in the totals topic, as the projector reads them, on the real Redis
(one server or the cluster): the member, its version record and its metadata go, whatever version
they held; other players stay."""

from __future__ import annotations

import pytest
from aiokafka import ConsumerRecord
from redis.asyncio import Redis

from regions.core.boards import Board, TiePolicy
from regions.core.ordering import reached_key
from regions.projector.totals import TotalsBatch
from regions.runtime.settings import Settings
from regions.stores.redis.projection import RedisProjection
from regions.stores.redis.reads import RankReader
from schema.records import Codec, PlayerTotal, totals_key
from schema.redis_keys import shard_of

CODEC = Codec()


def _record(offset: int, board: Board, user: str, value: PlayerTotal | None) -> ConsumerRecord:
    raw = None if value is None else CODEC.encode(value)
    return ConsumerRecord("t.totals.v1", 0, offset, 0, 0, totals_key(board.id, user), raw, None, 0, 0, [])


def _total(board: Board, user: str, version: int, total: int, metadata: str = "") -> PlayerTotal:
    return PlayerTotal(board_id=board.id, user_id=user, total=total, version=version, reached=reached_key(1_000 + version, "e" * 32),
                       sort_order=board.sort_order.value, tie_policy=board.tie_policy.value, source_partition=0,
                       source_offset=version, event_id="e", shards=board.shards, metadata=metadata)  # fmt: skip


@pytest.mark.parametrize(("tie", "shards"), [(TiePolicy.USER_ID, 1), (TiePolicy.FIRST_REACHED, 3)])
async def test_a_tombstone_removes_the_player_and_every_record_of_theirs(
    settings: Settings, redis_client: Redis, tie: TiePolicy, shards: int
) -> None:
    prefix = settings.redis.key_prefix
    projection = RedisProjection(redis_client, prefix)
    board = Board(f"erasure-{tie.value.lower()}-{shards}", "e", "local", tie_policy=tie, shards=shards)
    reader = RankReader(projection, prefix, "local")

    async def apply(*records: ConsumerRecord) -> None:
        batch = TotalsBatch("local")
        batch.add(list(records))
        assert batch.unprojectable == []
        await projection.apply_live(batch.by_board())

    await apply(_record(0, board, "ann", _total(board, "ann", 3, 9, '{"car":"x"}')),
                _record(1, board, "bob", _total(board, "bob", 1, 5)))  # fmt: skip
    assert [e.user_id for e in (await reader.top(board, 10)).entries] == ["ann", "bob"]

    await apply(_record(2, board, "ann", _total(board, "ann", 4, 10)), _record(3, board, "ann", None))

    assert [(e.user_id, e.rank) for e in (await reader.top(board, 10)).entries] == [("bob", 1)]
    assert (await reader.player(board, "ann"))[0] is None
    layout = await projection.layouts.live_one(board.id)
    assert layout is not None
    keys = layout.shard(prefix, shard_of("ann", layout.shards))
    assert await redis_client.hexists(keys.bucket("ann"), "ann") == 0
    assert await redis_client.hexists(keys.note_bucket("ann"), "ann") == 0
    for shard in range(layout.shards):
        members = await redis_client.zrange(layout.shard(prefix, shard).ranking, 0, -1)
        assert not any(m.endswith("ann") for m in members)
