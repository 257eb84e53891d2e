"""Moderation of a board that closes, on the real intake, processor and projector, with the home
region's lifecycle worker run in the test and driven pass by pass (``LifecycleWorker``), so that the
order of its steps is the test's:

- an action recorded while the board is OPEN whose record the worker writes only after the close's
  cutoff markers (a worker that was down, or behind) gets a result version of its own, and the latest
  archived result follows the moderation log; one written before the close is in the close's result;
- a restore of a player who never scored, on a CLOSED board, publishes its version once the record is
  passed (there is no total to wait for).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime

import msgspec
import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import OutOfOrderSequenceNumber
from cassandra.cluster import Session

from regions.actions.erase_rows import PlayerStores
from regions.actions.moderate import record_moderation
from regions.core.boards import Board, BoardStatus
from regions.core.lifecycle import required_cutoffs
from regions.core.moderation import ModerationRequest
from regions.lifecycle.loop import LifecycleStores, LifecycleWorker
from regions.lifecycle.moderated_periods import PeriodStores
from regions.lifecycle.moderation import write_moderation
from regions.runtime.settings import Settings
from regions.stores.cassandra.corrections import CassandraCorrections
from regions.stores.cassandra.erasures import CassandraErasures
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.moderation import CassandraModeration
from regions.stores.cassandra.periods import CassandraPeriods
from regions.stores.cassandra.results import CassandraResults
from regions.stores.cassandra.session import CassandraConnection
from regions.stores.kafka.clients import make_producer, partitions_of
from regions.stores.redis.connection import ProjectionRedis
from regions.stores.redis.projection import RedisProjection, connect_redis
from schema.records import HEARTBEAT_KEY, Heartbeat
from tests.conftest import RegionFactory
from tests.harness import Region, points
from tests.integration.regions.test_moderation_periods import _ranks


@dataclass
class DrivenWorker:
    """The home lifecycle worker, each step run when the test says."""

    worker: LifecycleWorker
    stores: LifecycleStores
    settings: Settings
    redis: ProjectionRedis
    producer: AIOKafkaProducer
    partitions: list[int]

    @property
    def _required(self) -> frozenset[str]:
        return required_cutoffs(self.settings.region_names(), len(self.partitions))

    async def write_markers(self, board_id: str) -> None:
        """The close's first step (the marker delay is 0): cutoff markers in every partition."""
        record = await self.stores.lifecycle.record(board_id)
        assert record is not None and record.board.status is BoardStatus.CLOSING
        await self.worker.step(self.stores.lifecycle, record, self.producer, self.partitions, self._required)
        assert self.worker.region in ((await self.stores.lifecycle.record(board_id)) or record).markers

    async def write_moderation(self) -> bool:
        stores = self.stores
        return await write_moderation(
            stores.lifecycle, PeriodStores(stores.moderation, stores.corrections, stores.periods, stores.results),
            RedisProjection(self.redis, self.settings.redis.key_prefix), self.producer,
            topic=self.settings.kafka.topic("awards"), partitions=self.partitions, region=self.settings.region,
        )  # fmt: skip

    async def published(self, board_id: str, version: int) -> bool:
        """One whole pass of the worker; then whether the board is CLOSED with ``version`` archived."""
        await self.worker.tick(self.producer, self.partitions, self._required)
        record = await self.stores.lifecycle.record(board_id)
        return record is not None and record.board.status is BoardStatus.CLOSED and record.result_version == version


@pytest.fixture
async def stack(region_factory: RegionFactory, topics: Settings, cassandra_session: Session) -> AsyncIterator[
    tuple[Region, DrivenWorker]
]:  # fmt: skip
    lifecycle = topics.lifecycle.model_copy(update={"marker_delay_s": 0.0, "chunk_size": 2})
    region = await region_factory(topics.model_copy(update={"lifecycle": lifecycle}),
                                  services=("processor", "projector", "intake"))  # fmt: skip
    settings = region.settings
    stores = LifecycleStores(
        CassandraLifecycle(cassandra_session), CassandraResults(cassandra_session),
        CassandraCorrections(cassandra_session), CassandraPeriods(cassandra_session),
        CassandraModeration(cassandra_session), CassandraErasures(cassandra_session), PlayerStores.on(cassandra_session),
    )  # fmt: skip
    cassandra = CassandraConnection(lambda: cassandra_session, lambda _: stores, where="tests", owns_session=False)
    await cassandra.run()
    redis = connect_redis(settings.redis)
    producer = make_producer(settings.kafka)
    await producer.start()
    partitions = await partitions_of(settings.kafka, settings.kafka.topic("awards"))
    worker = LifecycleWorker(settings, cassandra, redis)
    try:
        yield region, DrivenWorker(worker, stores, settings, redis, producer, partitions)
    finally:
        await producer.stop()
        await redis.aclose()


async def _board(region: Region, scores: dict[str, int]) -> Board:
    board = Board(f"modclose-{uuid.uuid4().hex[:8]}", "Season", region.settings.region)
    await region.create_board(board)
    for user, score in scores.items():
        assert (await region.client.send(points(board.id, uuid.uuid4().hex, user, score))).status_code == 202
    for user, score in scores.items():
        await region.wait_for_total(board.id, user, score)
    return board


async def _act(stores: LifecycleStores, board: Board, user: str, *, hidden: bool) -> int:
    request = ModerationRequest(board.id, user, hidden, "cheating" if hidden else "appeal upheld")
    entry = await record_moderation(stores.lifecycle, stores.moderation, request, region=board.home_region,
                                    now=datetime.now(UTC))  # fmt: skip
    return entry.sequence


async def _claims(stores: LifecycleStores, board: Board) -> list[tuple[int, str, tuple[tuple[str, bool], ...]]]:
    return [(e.result_version, e.correction_id, e.moderated) for e in await stores.corrections.of_board(board.id)]


async def test_an_action_whose_record_lands_after_the_cutoff_gets_a_version_and_the_archive_follows_the_log(
    stack: tuple[Region, DrivenWorker], cassandra_session: Session
) -> None:
    region, driven = stack
    stores, results = driven.stores, CassandraResults(cassandra_session)
    board = await _board(region, {"ann": 30, "bob": 20, "cat": 10})

    assert await _act(stores, board, "cat", hidden=True) == 1
    assert await driven.write_moderation()  # written while OPEN: before any cutoff, in the close's result
    assert await _act(stores, board, "bob", hidden=True) == 2  # recorded while OPEN ...
    assert await stores.lifecycle.begin_close(board.id, "season over", datetime.now(UTC))
    await driven.write_markers(board.id)
    assert await driven.write_moderation()  # ... written after the cutoff markers
    assert await _claims(stores, board) == [(2, "moderation:2", (("bob", True),))]

    await Region.wait_until(lambda: driven.published(board.id, 2), 60, "version 2 published")
    assert [user for _, user, _ in await _ranks(results, board.id, 1)] in (["ann", "bob"], ["ann"])
    assert await _ranks(results, board.id, 2) == [(1, "ann", 30)]

    assert await _act(stores, board, "bob", hidden=False) == 3  # on the CLOSED board
    await Region.wait_until(lambda: driven.published(board.id, 3), 60, "version 3 published")
    assert await _ranks(results, board.id, 3) == [(1, "ann", 30), (2, "bob", 20)]
    log = {e.user_id: e.hidden for e in await stores.moderation.page(board.id, 0, 10)}  # each player's last
    latest = {user for _, user, _ in await _ranks(results, board.id, 3)}
    assert all((user in latest) != hidden for user, hidden in log.items())
    assert await _claims(stores, board) == [(2, "moderation:2", (("bob", True),)), (3, "moderation:3", (("bob", False),))]


async def test_restoring_a_player_who_never_scored_on_a_closed_board_publishes_its_version(
    stack: tuple[Region, DrivenWorker], cassandra_session: Session
) -> None:
    region, driven = stack
    stores, results = driven.stores, CassandraResults(cassandra_session)
    board = await _board(region, {"ann": 30})
    assert await stores.lifecycle.begin_close(board.id, "season over", datetime.now(UTC))
    await Region.wait_until(lambda: driven.published(board.id, 1), 60, "closed")

    await _act(stores, board, "ghost", hidden=True)
    await Region.wait_until(lambda: driven.published(board.id, 2), 60, "version 2 (hide) published")
    await _act(stores, board, "ghost", hidden=False)
    await Region.wait_until(lambda: driven.published(board.id, 3), 60, "version 3 (restore) published")
    assert await _ranks(results, board.id, 3) == await _ranks(results, board.id, 2) == [(1, "ann", 30)]


async def test_a_refused_producer_ends_the_workers_pass_instead_of_failing_the_close_for_ever(
    stack: tuple[Region, DrivenWorker],
) -> None:
    """The brokers refusing the worker's producer's sequence numbers (after a broker restart that
    truncated its log) is the producer's trouble, not the board's: the pass raises it, so the run
    starts again with a new producer, instead of logging it as the board's and retrying with the
    same producer, which the brokers would refuse on every pass."""
    region, driven = stack
    board = await _board(region, {"ann": 5})
    assert await driven.stores.lifecycle.begin_close(board.id, "season over", datetime.now(UTC))
    awards = driven.settings.kafka.topic("awards")
    beat = msgspec.msgpack.encode(Heartbeat(region=region.settings.region, at_ms=int(time.time() * 1000)))
    for partition in driven.partitions:
        await driven.producer.send_and_wait(awards, beat, key=HEARTBEAT_KEY, partition=partition)
    for partition in driven.partitions:  # the brokers know the producer now: its next records are out of order
        driven.producer._txn_manager.increment_sequence_number(TopicPartition(awards, partition), 5)
    with pytest.raises(OutOfOrderSequenceNumber):
        await driven.worker.tick(driven.producer, driven.partitions, driven._required)
