"""One shard's keys lost under load (a Redis Cluster master restarted empty, the master that holds
the epoch and positions being another), read through the gateway: the projector must notice and
rebuild (not crash-loop, not go on over a partial board), and every answer meanwhile must say
``stale`` or reflect every acknowledged award its asOf covers (I5), versions never going back (I3).

Run on the local cluster (``--redis-url redis+cluster://127.0.0.1:6380``) a wipe is FLUSHALL on one
master, which also takes whatever else of this test lives there; on one Redis it is the deletion of
every key of the shards that master would hold (their hash tags), which is what a cluster loses.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from redis.asyncio import RedisCluster

from regions.core.boards import Board
from regions.runtime.settings import Settings
from regions.stores.redis.projection import RedisProjection
from schema.redis_keys import positions_key, shard_tag
from tests.conftest import RegionFactory
from tests.e2e.gateway.conftest import start_gateway
from tests.faults.test_projection_faults import Traffic, _check, _resyncs, _traffic, _warm, recover_from
from tests.harness import Region

SHARDS = 4


def _node(redis: RedisCluster, key: str) -> str:
    return str(redis.get_node_from_key(key).name)


async def _placed_board(settings: Settings, redis: object) -> tuple[str, list[list[int]]]:
    """A board id and two groups of its shards, each the shards one master holds: the first group
    holds shard 0 (the board's own keys: hint sequence, cutoffs), the second only other shards;
    neither master holds the positions. On one Redis: shard 0, then shard 1."""
    prefix = settings.redis.key_prefix
    if not isinstance(redis, RedisCluster):
        return f"sl-{uuid.uuid4().hex[:8]}", [[0], [1]]
    await redis.initialize()  # (learns which master serves which slot)
    epoch_node = _node(redis, positions_key(prefix))
    for _ in range(1000):
        board = f"sl-{uuid.uuid4().hex[:8]}"
        nodes = [_node(redis, shard_tag(prefix, board, s) + ":state") for s in range(SHARDS)]
        third = [n for n in nodes if n not in (epoch_node, nodes[0])]
        if nodes[0] != epoch_node and third:
            groups = [[s for s, n in enumerate(nodes) if n == owner] for owner in (nodes[0], third[0])]
            return board, groups
    raise AssertionError("no board id spreads its shards over the masters as the test needs")


async def _wipe(projection: RedisProjection, prefix: str, board: str, shards: list[int]) -> None:
    redis = projection.redis
    if isinstance(redis, RedisCluster):  # the master restarts empty
        await redis.flushall(target_nodes=redis.get_node_from_key(shard_tag(prefix, board, shards[0])))
        return
    for shard in shards:
        keys = [k async for k in redis.scan_iter(match=shard_tag(prefix, board, shard) + "*", count=10_000)]
        if keys:
            await redis.delete(*keys)


async def _lose_shards_and_recover(
    traffic: Traffic,
    projection: RedisProjection,
    prefix: str,
    board: str,
    shards: list[int],
    *,
    flowing: bool = True,
) -> None:
    """Wipe ``shards``, then wait for the projector to have noticed (a new epoch, rebuilt), the
    subscriber's Resync, reads covering every award acknowledged before the wipe and (while
    awards are ``flowing``) awards acknowledged after it."""
    _, before = await recover_from(
        traffic,
        projection,
        lambda: _wipe(projection, prefix, board, shards),
        f"a new epoch, rebuilt after the loss of shard(s) {shards}",
    )
    if flowing:
        await traffic.wait(
            lambda: len(traffic.history.acked) > before + 50, "awards acknowledged after the wipe"
        )


async def test_a_shard_lost_apart_from_the_epoch_is_noticed_and_no_answer_claims_it(
    region_factory: RegionFactory, settings: Settings, tmp_path: Path
) -> None:
    prefix = settings.redis.key_prefix
    chosen = settings.model_copy(
        update={"projector": settings.projector.model_copy(update={"max_batch": 100})}
    )
    region: Region = await region_factory(chosen, services=("processor", "projector", "intake"))
    board_id, groups = await _placed_board(settings, region.projection.redis)
    board = Board(board_id, "Shard loss board", region.settings.region, shards=SHARDS)
    await region.create_board(board)
    async with (
        start_gateway(region.env, tmp_path / "gateway.log", LB_GATEWAY__TOP_CACHE_TTL_S="0") as gateway,
        _traffic(region, gateway, board.id) as traffic,
    ):
        await _warm(traffic)
        started = time.monotonic()
        for shards in groups:  # the board's own shard first, then another one
            await _lose_shards_and_recover(traffic, region.projection, prefix, board.id, shards)
        traffic.no_more_awards.set()
        since = time.monotonic()
        await traffic.wait(lambda: traffic.history.covers(since), "a non-stale read covering every award")
        # No award flows now, so no write meets the emptied shard: the projector's tick finds it.
        await _lose_shards_and_recover(traffic, region.projection, prefix, board.id, groups[1], flowing=False)
        # Readers ask all the time, so some read a board missing a shard (or being rebuilt): stale.
        assert traffic.history.stale_between(started, time.monotonic()) > 0
    assert "sequence_reset" not in _resyncs(traffic.history, started)
    _check(traffic.history)
