"""The lifecycle worker of one region: the close barrier's steps for every CLOSING board, the
publishing of every recorded correction of the CLOSED boards homed here, and the status hints.

Every region's worker writes its cutoff markers into each partition of its own awards topic once
``settings.marker_delay_ms`` has passed since the board began closing, then records in the catalog
that it did (a crash in between writes them again: the first marker of a partition is its cutoff).
The worker of the board's home region waits until its projection has reached the cutoff of every
(region, partition), archives the frozen standings as result version 1 and sets CLOSED. What to do
next is decided by the pure ``regions.core.lifecycle.next_step`` from the catalog and the projection.
The home region's worker then publishes the board's corrections (``publish``), and every region's
worker tells its own subscribers when a board's status or result version changes (``announce``).

A period of a windowed board closes with the same steps, as the board ``<board>@<key>`` (see
``regions.lifecycle.windows``): the home region's worker begins the close of every period whose end
plus the grace has passed, on its own clock (``clock``, plus ``windows.clock_offset_s`` in tests),
and writes the expiry markers of rolling boards.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from aiokafka import AIOKafkaProducer

from regions.actions.erase_rows import PlayerStores
from regions.core.boards import BoardStatus
from regions.core.corrections import FIRST_RESULT_VERSION
from regions.core.lifecycle import Archive, CloseProgress, WriteMarkers, next_step, required_cutoffs
from regions.lifecycle import metrics, windows
from regions.lifecycle.announce import StatusAnnouncer
from regions.lifecycle.archive import archive_projection
from regions.lifecycle.erasure import ErasureWorker
from regions.lifecycle.moderated_periods import PeriodStores
from regions.lifecycle.moderation import write_moderation
from regions.lifecycle.publish import CorrectionPublisher, publish_periods
from regions.runtime.logs import ThrottledLog
from regions.runtime.settings import Settings
from regions.stores.cassandra.corrections import CassandraCorrections
from regions.stores.cassandra.erasures import CassandraErasures
from regions.stores.cassandra.lifecycle import CassandraLifecycle, CloseRecord
from regions.stores.cassandra.moderation import CassandraModeration
from regions.stores.cassandra.periods import CassandraPeriods
from regions.stores.cassandra.results import CassandraResults
from regions.stores.cassandra.session import CassandraConnection
from regions.stores.kafka.clients import SEQUENCE_LOST, make_producer, partitions_of
from regions.stores.redis.connection import ProjectionRedis
from regions.stores.redis.cutoffs import reached_cutoffs
from regions.stores.redis.projection import RedisProjection
from schema.lifecycle import CutoffMarker, LifecycleCodec, cutoff_marker_key

log = logging.getLogger(__name__)
RESULT_VERSION = FIRST_RESULT_VERSION  # the result a close archives; corrections make the next ones
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LifecycleStores:
    lifecycle: CassandraLifecycle
    results: CassandraResults
    corrections: CassandraCorrections
    periods: CassandraPeriods
    moderation: CassandraModeration
    erasures: CassandraErasures
    players: PlayerStores


class Closes(Protocol):
    """Where a close is recorded: the board catalog for a board, the periods table for a period."""

    async def record_markers(self, board_id: str, region: str, at: datetime) -> None: ...

    async def finish_close(
        self, board_id: str, cutoffs: Mapping[str, int], version: int, at: datetime
    ) -> bool: ...


class LifecycleWorker:
    def __init__(
        self,
        settings: Settings,
        cassandra: CassandraConnection[LifecycleStores],
        redis: ProjectionRedis,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings, self._cassandra, self._redis = settings, cassandra, redis
        self._region = settings.region
        self._encode = LifecycleCodec().encode
        self._errors = ThrottledLog(log, interval_s=30)
        self._projection = RedisProjection(redis, settings.redis.key_prefix)
        self._announcer = StatusAnnouncer(self._projection, settings.redis.key_prefix)
        self._erasures = ErasureWorker(settings, self._projection)
        self._clock = clock
        self._published: dict[str, int] = {}  # periods' versions found published (publish_periods)
        self.running = asyncio.Event()

    def now_ms(self) -> int:
        """The worker's time, for closes and time windows."""
        return self._settings.windows.now_ms(self._clock())

    @property
    def region(self) -> str:
        return self._region

    @property
    def grace_ms(self) -> int:
        return int(self._settings.windows.grace_s * 1000)

    @property
    def awards_topic(self) -> str:
        return self._settings.kafka.topic("awards")

    async def run(self, stop: asyncio.Event) -> None:
        kafka = self._settings.kafka
        partitions = await partitions_of(kafka, kafka.topic("awards"))
        required = required_cutoffs(self._settings.region_names(), len(partitions))
        producer = make_producer(kafka)
        await producer.start()
        try:
            self.running.set()
            while not stop.is_set():
                busy = await self.tick(producer, partitions, required)
                wait = self._settings.lifecycle.pass_interval_s(busy)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), wait)
        finally:
            self.running.clear()
            await producer.stop()

    async def tick(self, producer: AIOKafkaProducer, partitions: list[int], required: frozenset[str]) -> bool:
        """One pass over the boards (closing, corrections, then status hints) and the windowed
        boards' periods; a board that fails is tried again next pass. Whether any work is in progress
        (a board or period closing, a correction, moderation action or erasure to write, or a step
        that failed), so the next pass comes at the poll interval rather than the idle one."""
        stores = self._cassandra.adapter
        scan = await stores.lifecycle.scan()
        records = scan.records
        assigned = await stores.corrections.last_versions()
        metrics.report_closing(records, self.now_ms())
        publisher = CorrectionPublisher(
            self._settings,
            (stores.lifecycle, stores.results, stores.corrections),
            self._projection,
            self._errors,
        )
        busy = False
        for record in records:
            board = record.board
            try:
                if board.status is BoardStatus.CLOSING:
                    busy = True
                    await self.step(stores.lifecycle, record, producer, partitions, required)
                elif self._correction_due(record, assigned.get(board.id)):
                    busy = True
                    await publisher.step(record, producer, partitions)
            except SEQUENCE_LOST:
                raise  # the producer's trouble, not the board's: the run starts again with a new one
            except Exception as exc:  # one board's trouble (e.g. a timeout) must not stop the others
                self._errors.log(logging.WARNING, board.id, "%s %s: %r; trying again",
                                 "closing" if board.status is BoardStatus.CLOSING else "correcting",
                                 board.id, exc)  # fmt: skip
        homed = {r.board.id: r.board for r in records if r.board.home_region == self._region}
        busy = await publish_periods(publisher, stores.periods, homed, assigned, self._published,
                                     (producer, partitions), self.guarded) or busy  # fmt: skip
        await self._announcer.announce(records)
        periods = PeriodStores(stores.moderation, stores.corrections, stores.periods, stores.results)
        # A step that failed (None) counts as work in progress: it is tried again soon.
        windowed = windows.tick(self, stores.periods, producer, partitions, required, scan.windowed)
        busy = await self.guarded("time windows", windowed) is not False or busy
        moderated = write_moderation(stores.lifecycle, periods, self._projection, producer,
                                     topic=self.awards_topic, partitions=partitions, region=self._region)  # fmt: skip
        busy = await self.guarded("moderation", moderated) is not False or busy
        erasing = self._erasures.tick(stores.erasures, stores.players, producer, partitions)
        return await self.guarded("erasures", erasing) is not False or busy

    async def guarded(self, what: str, step: Coroutine[Any, Any, T]) -> T | None:
        """Run ``step`` and return what it returns; its failure is logged (None), and tried again next
        pass, unless the brokers refused the producer's sequence numbers (``SEQUENCE_LOST``): that ends
        the run, which starts again with a new producer."""
        try:
            return await step
        except SEQUENCE_LOST:
            raise  # the producer's trouble: the run starts again with a new one
        except Exception as exc:  # one board's trouble (e.g. a timeout) must not stop the others
            self._errors.log(logging.WARNING, what, "%s: %r; trying again", what, exc)
            return None

    def _correction_due(self, record: CloseRecord, assigned: int | None) -> bool:
        """A CLOSED board homed here has a recorded correction not yet published."""
        published = record.result_version or RESULT_VERSION
        return (
            record.board.status is BoardStatus.CLOSED
            and record.board.home_region == self._region
            and assigned is not None
            and assigned > published
        )

    async def step(
        self,
        closes: Closes,
        record: CloseRecord,
        producer: AIOKafkaProducer,
        partitions: list[int],
        required: frozenset[str],
    ) -> None:
        board = record.board
        home = board.home_region == self._region
        reached = (
            await reached_cutoffs(self._redis, self._settings.redis.key_prefix, board.id) if home else {}
        )
        progress = CloseProgress(board.id, board.home_region, BoardStatus.CLOSING, record.closing_at_ms,
                                 record.markers, reached)  # fmt: skip
        step = next_step(progress, region=self._region, required=required, now_ms=self.now_ms(),
                         marker_delay_ms=self._settings.marker_delay_ms)  # fmt: skip
        if isinstance(step, WriteMarkers):
            await self._write_markers(closes, record, producer, partitions)
        elif isinstance(step, Archive):
            await self._archive(closes, record, step.cutoffs)

    async def _write_markers(
        self, closes: Closes, record: CloseRecord, producer: AIOKafkaProducer, partitions: list[int]
    ) -> None:
        marker = CutoffMarker(board_id=record.board.id, region=self._region,
                              closing_at_ms=record.closing_at_ms or 0, written_at_ms=int(time.time() * 1000))  # fmt: skip
        topic, key, value = (
            self._settings.kafka.topic("awards"),
            cutoff_marker_key(record.board.id),
            self._encode(marker),
        )
        await asyncio.gather(
            *(producer.send_and_wait(topic, value, key=key, partition=p) for p in partitions)
        )
        await closes.record_markers(record.board.id, self._region, datetime.now(UTC))
        log.info("%s: cutoff markers written to %d partitions of %s", record.board.id, len(partitions), topic)

    async def _archive(self, closes: Closes, record: CloseRecord, cutoffs: dict[str, int]) -> None:
        results = self._cassandra.adapter.results
        started = time.perf_counter()
        archived = await archive_projection(
            self._redis, self._settings.redis.key_prefix, results, record.board, version=RESULT_VERSION,
            reason=record.close_reason, chunk_size=self._settings.lifecycle.chunk_size,
            created_at=datetime.now(UTC), pause_s=self._settings.lifecycle.fault_chunk_pause_ms / 1000,
        )  # fmt: skip
        if await closes.finish_close(record.board.id, cutoffs, RESULT_VERSION, datetime.now(UTC)):
            log.info("%s: CLOSED; result version %d holds %d players in %d chunks (%d written in %.2f s)",
                     record.board.id, RESULT_VERSION, archived.header.player_count, archived.header.chunk_count,
                     archived.chunks_written, time.perf_counter() - started)  # fmt: skip
