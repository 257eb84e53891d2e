"""Rebuilds and reshards from the real totals topic into fresh layouts (no projector running): the
shard count a board is laid out in, an interrupted replay resumed where it stopped, the earlier key
layout replaced, and a reshard that verifies before it switches."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from regions.core.boards import Board
from regions.core.reads import Row
from regions.projector.rebuild import rebuild, rebuild_to_run, run_rebuild
from regions.projector.reshard import Reshard, ReshardRefused
from regions.runtime.settings import Settings
from regions.stores.kafka.clients import make_producer
from regions.stores.redis.control import ProjectionControl, RebuildCause, RebuildRequest, RebuildState
from regions.stores.redis.layouts import LEGACY, Layout
from regions.stores.redis.projection import ProjectedTotal, RedisProjection
from regions.stores.redis.reads import RankReader
from schema.records import Codec, PlayerTotal, totals_key
from schema.redis_keys import board_keys, positions_key


def _total(board: str, user: str, total: int, version: int = 1, shards: int = 1) -> PlayerTotal:
    return PlayerTotal(board_id=board, user_id=user, total=total, version=version, reached="0" * 27,
                       sort_order="DESC", tie_policy="USER_ID", source_partition=0, source_offset=0,
                       event_id="0" * 32, shards=shards)  # fmt: skip


async def _send(settings: Settings, totals: list[PlayerTotal]) -> None:
    """Totals as processors write them, spread over the partitions."""
    producer, codec = make_producer(settings.kafka), Codec()
    await producer.start()
    try:
        topic, parts = settings.kafka.topic("totals"), settings.kafka.partitions
        for i, t in enumerate(totals):
            await producer.send(
                topic, codec.encode(t), key=totals_key(t.board_id, t.user_id), partition=i % parts
            )
        await producer.flush()
    finally:
        await producer.stop()


async def _rows(projection: RedisProjection, prefix: str, board: str) -> list[Row]:
    reader = RankReader(projection, prefix, "local")
    return [r async for part in reader.ranked_rows(Board(board, board, "local"), 50) for r in part]


class _Interrupted(Exception):
    pass


async def test_a_new_board_takes_the_shard_count_its_awards_carry(
    topics: Settings, redis_client: Redis
) -> None:
    prefix = topics.redis.key_prefix
    await _send(
        topics, [_total("wide", f"u{i}", i, shards=3) for i in range(30)] + [_total("narrow", "a", 1)]
    )
    projection = RedisProjection(redis_client, prefix)

    report = await rebuild(topics, projection)

    assert report.boards == ["narrow", "wide"]
    layouts = await projection.layouts.live(["wide", "narrow"])
    assert {b: layout.shards if layout else None for b, layout in layouts.items()} == {"wide": 3, "narrow": 1}
    assert [r[0] for r in await _rows(projection, prefix, "wide")] == [f"u{i}" for i in range(29, -1, -1)]


async def test_an_interrupted_rebuild_resumes_its_replay_where_it_stopped(
    topics: Settings, redis_client: Redis
) -> None:
    prefix = topics.redis.key_prefix
    players = 30_000
    await _send(topics, [_total("big", f"p{i:05d}", i, shards=2) for i in range(players)])
    projection = RedisProjection(redis_client, prefix)
    replayed: list[tuple[int, int]] = []

    def stop_once_checkpointed(request: RebuildRequest) -> None:
        if request.state is RebuildState.REPLAYING and request.resume:
            raise _Interrupted  # (the request, with its checkpoint, is recorded before it is shown)

    with pytest.raises(_Interrupted):
        await rebuild(topics, projection, show=stop_once_checkpointed)
    interrupted = await ProjectionControl(redis_client, prefix).rebuild()
    assert interrupted is not None and interrupted.active and interrupted.resume

    def watch(request: RebuildRequest) -> None:
        if request.state is RebuildState.REPLAYING and request.total:
            replayed.append((request.done, request.total))

    report = await rebuild(topics, projection, show=watch)

    assert report.request == interrupted.id and report.boards == ["big"]
    assert replayed and max(total for _, total in replayed) < players  # only what was left
    assert await projection.count("big") == players
    assert [r[0] for r in (await _rows(projection, prefix, "big"))[:3]] == ["p29999", "p29998", "p29997"]


async def test_a_projection_in_the_earlier_key_layout_is_rebuilt_into_the_new_one(
    topics: Settings, redis_client: Redis
) -> None:
    prefix = topics.redis.key_prefix
    legacy = board_keys(prefix, "old")
    await redis_client.zadd(legacy.legacy[0], {"ann": -5.0})
    await redis_client.hset(legacy.legacy[1], "ann", "1|5|ann")
    await redis_client.hset(positions_key(prefix), mapping={"epoch": "e-old", "local:0": 3})  # no "layout"
    await _send(topics, [_total("old", "ann", 5), _total("old", "bob", 7)])
    projection, control = RedisProjection(redis_client, prefix), ProjectionControl(redis_client, prefix)

    positions, request = await rebuild_to_run(projection, control)
    assert request is not None and request.cause is RebuildCause.LOST and positions.rebuilding
    await rebuild(topics, projection)

    assert [r[:2] for r in await _rows(projection, prefix, "old")] == [("bob", "-7"), ("ann", "-5")]
    assert await projection.layouts.retired() == [Layout("old", LEGACY, 1)]
    assert await projection.layouts.delete_retired() == 1
    assert await redis_client.exists(*legacy.legacy) == 0
    assert not (await projection.positions()).rebuilding


async def test_a_reshard_verifies_every_version_then_switches_the_board_in_one_step(
    topics: Settings, redis_client: Redis
) -> None:
    prefix = topics.redis.key_prefix
    await _send(topics, [_total("rs", f"u{i:03d}", i % 17, version=1 + i % 3) for i in range(300)])
    projection = RedisProjection(redis_client, prefix)
    await rebuild(topics, projection)
    before, old = await _rows(projection, prefix, "rs"), await projection.layouts.live_one("rs")
    shown: list[RebuildRequest] = []

    report = await rebuild(
        topics, projection, show=shown.append, wanted=RebuildRequest.new(RebuildCause.RESHARD, "rs", 5)
    )

    layout = await projection.layouts.live_one("rs")
    assert report.boards == ["rs"] and layout is not None and layout.shards == 5 and layout != old
    assert await _rows(projection, prefix, "rs") == before  # the same answers from five shards
    verified = [r for r in shown if r.state is RebuildState.VERIFYING]
    assert verified and verified[-1].done == verified[-1].total == 300
    assert shown[-1].state is RebuildState.DONE and shown[-1].error == ""
    assert await projection.layouts.retired() == [old]


class _Shown:
    def __init__(self) -> None:
        self.steps: list[tuple[int, int]] = []

    async def verifying(self, done: int, total: int) -> None:
        self.steps.append((done, total))


async def test_a_reshard_that_lacks_a_version_of_the_old_layout_is_refused(
    settings: Settings, redis_client: Redis
) -> None:
    prefix = settings.redis.key_prefix
    projection = RedisProjection(redis_client, prefix)
    totals = [ProjectedTotal(f"u{i}", 2, i, -i, f"{i:027x}|u{i}") for i in range(40)]
    await projection.apply("strict", totals)
    old, fresh = await projection.layouts.live_one("strict"), Layout("strict", "g9", 3)
    assert old is not None
    await projection.layouts.prepare([fresh])
    behind = [ProjectedTotal("u7", 1, 7, -7, f"{7:027x}|u7")]  # an older version than the live one
    await projection.apply_fresh([(fresh, [t for t in totals if t.user_id not in ("u3", "u7")] + behind)])
    check, shown = Reshard(projection, prefix, old, fresh, strip=28), _Shown()

    await check.verify(shown, every=True)  # finds u3 and u7 behind: the last catch-up may bring them
    assert shown.steps[-1] == (40, 40)
    await projection.apply_fresh([(fresh, [totals[3]])])  # u3 catches up, u7 does not
    with pytest.raises(ReshardRefused, match=r"lacks the versions of 1 player\(s\).*\(u7\)"):
        await check.verify(shown, every=False)


async def test_a_rebuild_stopped_after_its_swap_resumes_into_the_layouts_it_swapped_in(
    topics: Settings, redis_client: Redis
) -> None:
    prefix = topics.redis.key_prefix
    await _send(topics, [_total("a", f"u{i}", i) for i in range(20)] + [_total("b", "x", 3)])
    projection, control = RedisProjection(redis_client, prefix), ProjectionControl(redis_client, prefix)
    await rebuild(topics, projection)
    positions, _ = await rebuild_to_run(projection, control)
    request = RebuildRequest.new(RebuildCause.REQUESTED)
    await control.put_rebuild(request)

    @contextlib.asynccontextmanager
    async def crash_after_the_swap() -> AsyncIterator[None]:
        yield
        raise _Interrupted  # the swap inside the pause is done; the request says SWAPPING

    with pytest.raises(_Interrupted):
        await run_rebuild(topics, projection, control, request, positions, pause=crash_after_the_swap)
    stopped = await control.rebuild()
    assert stopped is not None and stopped.state is RebuildState.SWAPPING
    swapped = await projection.layouts.live(["a", "b"])

    report = await rebuild(topics, projection)  # resumes it: replays into the layouts now live

    assert report.request == request.id and report.boards == ["a", "b"]
    assert await projection.layouts.live(["a", "b"]) == swapped
    assert await projection.count("a") == 20 and await projection.total_of("b", "x") == 3
