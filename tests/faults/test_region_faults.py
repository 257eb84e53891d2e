"""Faults on the real stack: crashes, Redis loss and a Cassandra outage; then the invariants."""

from __future__ import annotations

import asyncio
import os
import random
import sys
import uuid

from aiokafka import TopicPartition
from cassandra.cluster import Session

from regions.core.boards import Board
from regions.core.reads import Row
from regions.runtime.settings import Settings
from regions.stores.cassandra.audit import CassandraAudit
from regions.stores.kafka.clients import make_consumer
from regions.stores.redis.reads import RankReader
from schema.event_id import event_id
from schema.redis_keys import shard_of
from tests.conftest import RegionFactory
from tests.faults.history import History, check_totals
from tests.harness import Region
from tests.proxy import TcpProxy

PLAYERS = [f"player-{i:02d}" for i in range(30)]


async def _board(region: Region) -> Board:
    board = Board(f"f-{uuid.uuid4().hex[:8]}", "Fault board", region.settings.region)
    await region.create_board(board)
    return board


async def _load(
    region: Region, history: History, board: Board, count: int, rng: random.Random, retry: bool = True
) -> None:
    """``count`` submissions, 20 at a time; about one in eight repeats an earlier award. With
    ``retry``, an attempt without an answer is retried as a game service would."""
    submit = history.submit_as_a_client_would if retry else history.submit
    for start in range(0, count, 20):
        sends = []
        for _ in range(min(20, count - start)):
            earlier = [o for o in history.ops if o.outcome == "ok"]
            if earlier and rng.random() < 0.125:
                o = rng.choice(earlier)
                sends.append(submit(region.client, board.id, o.user, o.match, o.amount))
            else:
                sends.append(
                    submit(region.client, board.id, rng.choice(PLAYERS), uuid.uuid4().hex, rng.randint(1, 50))
                )
        await asyncio.gather(*sends)


async def _totals(region: Region, board: Board) -> dict[tuple[str, str], int | None]:
    return {(board.id, p): await region.total_of(board.id, p) for p in PLAYERS}


async def _converge(region: Region, history: History, board: Board, within: float = 60) -> None:
    """Totals match the history and the projection's asOf covers every acknowledged award (I5)."""

    async def problems() -> list[str]:
        found = check_totals(history, await _totals(region, board))
        offsets = (await region.projection.positions()).offsets
        here = region.settings.region
        found += [
            f"awards partition {p}: asOf {offsets.get((here, p))} < acknowledged offset {o}"
            for p, o in history.acknowledged.items()
            if offsets.get((here, p), -1) < o
        ]
        return found

    async def settled() -> bool:
        return not await problems()

    try:
        await region.wait_until(settled, within=within, what="totals and asOf matching the history")
    except TimeoutError:
        raise AssertionError("\n".join(await problems())) from None


async def _snapshot(region: Region, board: Board) -> list[Row]:
    """Every (member, score, version) of the board's projection, in rank order."""
    reader = RankReader(region.projection, region.settings.redis.key_prefix, region.settings.region)
    return [row async for part in reader.ranked_rows(board, 1000) for row in part]


async def test_processor_killed_mid_stream_ends_with_exact_totals(region: Region) -> None:
    board, history, rng = await _board(region), History(), random.Random(7)
    await _load(region, history, board, 300, rng)
    await region.kill("processor")  # SIGKILL, likely inside a transaction
    await _load(region, history, board, 300, rng)  # intake keeps accepting meanwhile
    await region.start("processor")
    await _load(region, history, board, 200, rng)
    await region.kill("processor")
    await region.start("processor")

    await _converge(region, history, board)

    assert history.every_award_acknowledged()  # so versions are exact
    for _board_id, user in history.expected_totals():
        version = await region.projection.version_of(board.id, user)
        applied = sum(1 for (b, u, _) in history.distinct("ok") if u == user)
        assert version == applied, f"{user}: version {version} after {applied} distinct awards"


async def test_restarted_processor_still_remembers_event_ids(region: Region) -> None:
    board, history, rng = await _board(region), History(), random.Random(11)
    await _load(region, history, board, 100, rng)
    await _converge(region, history, board)
    await region.kill("processor")
    await region.start("processor")  # state, dedupe memory included, comes back from the changelog

    for op in [o for o in history.ops if o.outcome == "ok"][:40]:
        await history.submit(region.client, board.id, op.user, op.match, op.amount)
    await _load(region, history, board, 20, rng)

    await _converge(region, history, board)


async def _loaded(region: Region, count: int, seed: int) -> tuple[Board, History, list[Row]]:
    """A board with ``count`` submissions applied, its history, and a snapshot of its projection."""
    board, history = await _board(region), History()
    await _load(region, history, board, count, random.Random(seed))
    await _converge(region, history, board)
    return board, history, await _snapshot(region, board)


async def test_projector_replayed_from_the_beginning_is_identical(region: Region) -> None:
    board, history, before = await _loaded(region, 200, 3)
    await region.stop("projector")
    positions = await region.projection.positions()
    await _rewind_projector(region)
    layout = await region.projection.layouts.live_one(board.id)
    assert layout is not None
    for user in PLAYERS[:10]:  # versions the projection lost: the replay must bring them back
        keys = layout.shard(region.settings.redis.key_prefix, shard_of(user, layout.shards))
        await region.projection.redis.hdel(keys.bucket(user), user)

    await region.start("projector")
    await _converge(region, history, board)

    assert await _snapshot(region, board) == before
    # The replay never moves a position back; the intake's heartbeats keep moving them forward.
    after = (await region.projection.positions()).offsets
    assert after.keys() == positions.offsets.keys()
    assert all(after[key] >= offset for key, offset in positions.offsets.items()), (after, positions.offsets)


async def _rewind_projector(region: Region) -> None:
    """What an operator's offset reset does: the projector's group starts again at offset 0."""
    kafka = region.settings.kafka
    consumer = make_consumer(kafka, group_id=f"{kafka.topic_prefix}.projector.{region.settings.region}")
    await consumer.start()
    try:
        tps = [TopicPartition(kafka.topic("totals"), p) for p in range(kafka.partitions)]
        consumer.assign(tps)
        await consumer.commit(dict.fromkeys(tps, 0))
    finally:
        await consumer.stop()


async def _wipe(region: Region) -> None:
    redis, prefix = region.projection.redis, region.settings.redis.key_prefix
    keys = [k async for k in redis.scan_iter(match=f"{prefix}:*")]
    await redis.delete(*keys)


async def test_redis_wiped_then_rebuilt_is_identical(region: Region) -> None:
    board, history, before = await _loaded(region, 200, 5)
    await region.stop("projector")
    await _wipe(region)

    rebuild = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "regions.cli", "rebuild", env={**os.environ, **region.env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output = (await rebuild.communicate())[0].decode()

    assert rebuild.returncode == 0, output
    assert "no projector is running: rebuilding here" in output
    assert "100%" in output and "rebuilt 1 board(s)" in output
    assert await _snapshot(region, board) == before
    as_of = await region.projection.positions()
    assert as_of.epoch is not None and as_of.offsets
    await region.start("projector")
    await _load(region, history, board, 40, random.Random(6))
    await _converge(region, history, board)


async def test_redis_wiped_under_a_running_projector_recovers_by_itself(region: Region) -> None:
    board, history, before = await _loaded(region, 120, 9)

    await _wipe(region)

    await region.wait_until(lambda: _same(region, board, before), what="projection rebuilt after the wipe")
    await _load(region, history, board, 40, random.Random(10))
    await _converge(region, history, board)


async def _same(region: Region, board: Board, before: tuple[object, object]) -> bool:
    return await _snapshot(region, board) == before


async def test_cassandra_outage_never_blocks_acceptance_and_audit_catches_up(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session
) -> None:
    proxy = TcpProxy(topics.cassandra.contact_points[0], topics.cassandra.port)
    port = await proxy.start()
    settings = topics.model_copy(update={
        "cassandra": topics.cassandra.model_copy(update={"port": port, "request_timeout_s": 1.0}),
        "intake": topics.intake.model_copy(update={"catalog_ttl_s": 0.5}),
    })  # fmt: skip
    region = await region_factory(settings)
    board, history = await _board(region), History()
    try:
        await _load(region, history, board, 20, random.Random(1))  # the intake has now seen the board
        proxy.cut()
        await asyncio.sleep(1.0)
        await _load(region, history, board, 60, random.Random(2), retry=False)  # a 503 would show

        assert {o.outcome for o in history.ops} == {"ok"}
        await _converge(region, history, board)  # ranked while Cassandra is unreachable
        audit = CassandraAudit(cassandra_session)
        ids = [event_id(board.id, m, u, "points") for (_, u, m) in history.distinct("ok")]
        missing_during_outage = sum([await audit.count(i) == 0 for i in ids])
        assert missing_during_outage > 0
        proxy.heal()

        async def audited() -> bool:
            return all([await audit.count(i) == 1 for i in ids])

        await region.wait_until(audited, within=60, what="audit rows for every applied award")
    finally:
        await proxy.close()
