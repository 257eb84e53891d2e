"""The home region's lifecycle worker publishing a recorded correction as result version n+1.

The steps (``regions.core.corrections.correction_step``), each resumable after a crash:
1. write one correction record per adjusted player into the awards partition of that player's key,
   then record in the correction's row where the last one of each partition landed (a crash in
   between writes them again: the processors deduplicate them per correction and player);
2. wait until the home projection's positions reach those offsets and every adjusted player holds
   the corrected score (the processors applied them, the projector projected them);
3. archive the projection as version n+1 (chunked; a crash mid-archive writes it again), record it
   as the board's newest result, and mark the correction published.
Corrections of one board are published one at a time, in version order. A version claimed by an
erasure (``regions.core.erasure.is_erasure``) is published by the erasure itself, from the archive.
A CLOSED period takes the versions of moderation actions (``regions.lifecycle.moderated_periods``)
with the same steps, as the board ``<board>@<key>`` (``publish_periods``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from aiokafka import AIOKafkaProducer

from regions.core.boards import Board, BoardStatus
from regions.core.corrections import (
    FIRST_RESULT_VERSION,
    ArchiveVersion,
    AwaitProjection,
    WriteRecords,
    correction_step,
)
from regions.core.erasure import is_erasure
from regions.core.lifecycle import parse_position_name, position_name
from regions.lifecycle.archive import archive_projection
from regions.runtime.logs import ThrottledLog
from regions.runtime.settings import Settings
from regions.stores.cassandra.corrections import CassandraCorrections, CorrectionEntry
from regions.stores.cassandra.lifecycle import CassandraLifecycle, CloseRecord
from regions.stores.cassandra.periods import CassandraPeriods
from regions.stores.cassandra.results import CassandraResults
from regions.stores.kafka.clients import partition_of_key
from regions.stores.redis.projection import RedisProjection
from schema.lifecycle import CorrectionRecord, LifecycleCodec, correction_key
from schema.records import totals_key
from schema.scoped import split_board_id

log = logging.getLogger(__name__)


class Publishes(Protocol):
    """Where a board's newest result version is recorded: the catalog, or the periods table."""

    async def publish_version(self, board_id: str, version: int) -> bool: ...


class CorrectionPublisher:
    def __init__(
        self,
        settings: Settings,
        stores: tuple[CassandraLifecycle, CassandraResults, CassandraCorrections],
        projection: RedisProjection,
        errors: ThrottledLog,
    ) -> None:
        self._settings, self._region = settings, settings.region
        self._lifecycle, self._results, self._corrections = stores
        self._projection, self._prefix = projection, settings.redis.key_prefix
        self._encode = LifecycleCodec().encode
        self._errors = errors

    async def step(
        self,
        record: CloseRecord,
        producer: AIOKafkaProducer,
        partitions: list[int],
        catalog: Publishes | None = None,
    ) -> None:
        """The next step of the board's next correction (the caller knows one is recorded); its version
        is recorded in ``catalog`` (by default the board catalog)."""
        board = record.board
        version = (record.result_version or FIRST_RESULT_VERSION) + 1
        entry = next(
            (e for e in await self._corrections.of_board(board.id) if e.result_version == version), None
        )
        if entry is None:
            raise RuntimeError(f"{board.id}: result version {version} is assigned but no correction holds it")
        if is_erasure(entry.correction_id):  # published by the erasure (regions.actions.erase_archives)
            self._errors.log(logging.INFO, f"erasure:{board.id}",
                             "%s: version %d is an erasure's; it waits for the erasure to publish it",
                             board.id, version)  # fmt: skip
            return
        positions = await self._projection.positions()
        reached = {position_name(r, p): mark.offset for (r, p), mark in positions.marks.items()}
        users = [a.user_id for a in entry.adjustments] + [user for user, _ in entry.moderated]
        totals = await self._projection.totals_of(board.id, users, board.sort_order)
        step = correction_step(entry.written, reached, entry.adjustments, totals, entry.moderated)
        if isinstance(step, WriteRecords):
            await self._write(record, entry, producer, partitions)
        elif isinstance(step, AwaitProjection):
            self._errors.log(logging.INFO, f"await:{board.id}",
                             "%s: version %d waits for the projection (positions %s, players %s)",
                             board.id, version, sorted(step.missing), list(step.players[:5]))  # fmt: skip
        elif isinstance(step, ArchiveVersion):
            await self._archive(record, entry, catalog or self._lifecycle)

    async def _write(
        self, record: CloseRecord, entry: CorrectionEntry, producer: AIOKafkaProducer, partitions: list[int]
    ) -> None:
        board, topic = record.board, self._settings.kafka.topic("awards")
        regions = sorted({parse_position_name(where)[0] for where in record.cutoffs})
        created_ms = int((entry.created_at or datetime.now(UTC)).replace(tzinfo=UTC).timestamp() * 1000)

        async def send(user_id: str, score: int) -> tuple[int, int]:
            value = CorrectionRecord(
                board_id=board.id, correction_id=entry.correction_id, user_id=user_id, score=score,
                result_version=entry.result_version, created_at_ms=created_ms, region=self._region,
                sort_order=board.sort_order.value, tie_policy=board.tie_policy.value, regions=regions,
            )  # fmt: skip
            partition = partition_of_key(totals_key(board.id, user_id), partitions)
            sent = await producer.send_and_wait(
                topic, self._encode(value), key=correction_key(board.id, user_id), partition=partition
            )
            return partition, sent.offset

        written: dict[str, int] = {}
        for partition, offset in await asyncio.gather(*(send(a.user_id, a.score) for a in entry.adjustments)):
            where = position_name(self._region, partition)
            written[where] = max(written.get(where, -1), offset)
        await self._corrections.record_written(board.id, entry.correction_id, written)
        log.info("%s: correction %r (version %d): %d records written to %s",
                 board.id, entry.correction_id, entry.result_version, len(entry.adjustments), topic)  # fmt: skip

    async def _archive(self, record: CloseRecord, entry: CorrectionEntry, catalog: Publishes) -> None:
        board, started = record.board, time.perf_counter()
        archived = await archive_projection(
            self._projection.redis, self._prefix, self._results, board, version=entry.result_version,
            reason=entry.reason, chunk_size=self._settings.lifecycle.chunk_size, created_at=datetime.now(UTC),
            pause_s=self._settings.lifecycle.fault_chunk_pause_ms / 1000,
        )  # fmt: skip
        if await catalog.publish_version(board.id, entry.result_version):
            log.info("%s: result version %d published (correction %r): %d players in %d chunks "
                     "(%d written in %.2f s)", board.id, entry.result_version, entry.correction_id,
                     archived.header.player_count, archived.header.chunk_count, archived.chunks_written,
                     time.perf_counter() - started)  # fmt: skip
        await self._corrections.record_published(board.id, entry.correction_id, datetime.now(UTC))


async def publish_periods(
    publisher: CorrectionPublisher,
    periods: CassandraPeriods,
    boards: Mapping[str, Board],
    assigned: Mapping[str, int],
    published: dict[str, int],
    kafka: tuple[AIOKafkaProducer, list[int]],
    guarded: Callable[[str, Coroutine[Any, Any, None]], Awaitable[None]],
) -> bool:
    """The next step of every CLOSED period (of ``boards``, those homed here) with a version assigned
    (``assigned``, by board id) past its published one; whether there was any. ``published``
    remembers the periods found up to date, so a pass reads only the periods whose assigned version
    moved since."""
    stepped = False
    for board_id, last in assigned.items():
        base, key = split_board_id(board_id)
        if key is None or base not in boards or published.get(board_id) == last:
            continue
        period = (await periods.between(base, key, key)).get(key)
        if period is None or period.status is not BoardStatus.CLOSED:
            continue
        if last <= (period.result_version or FIRST_RESULT_VERSION):
            published[board_id] = last
            continue
        record = CloseRecord(board=boards[base].for_period(key), closing_at_ms=period.closing_at_ms,
                             markers=period.markers, cutoffs=period.cutoffs,
                             result_version=period.result_version)  # fmt: skip
        await guarded(board_id, publisher.step(record, *kafka, periods))
        stepped = True
    return stepped
