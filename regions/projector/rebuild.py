"""Rebuilding the projection from the compacted totals topic, into fresh keys, swapped atomically.

Whoever holds the projection's write lease runs the rebuild recorded in Redis: the live projector,
or ``ops/lb rebuild`` when no projector runs (see ``redis_control``).

1. Replay the totals topic from the beginning into a fresh generation of keys, then from where that
   ended to the new end; the live keys keep answering and the live projector keeps projecting.
2. Pause the live projector between two batches and replay the short tail to the end once more:
   the fresh keys now hold every version the live keys hold, or a newer one. (Compaction cannot
   hide a record from the replay: a record is removed only for a newer one with the same key that
   is older than ``min.compaction.lag.ms``, a minute, so that newer one was written before the end
   the replay reads to, as long as each catch-up takes less than a minute.)
3. Swap each board's keys in one MULTI (its keys share a hash tag). A whole rebuild then moves the
   positions up to what the replay covered; after a loss, that same step clears ``rebuilding``, so
   a reader sees either a stale projection or the swapped boards with positions they cover.
4. Send each swapped board one ``resync`` hint. The live projector resumes where it paused: what it
   applies again is a no-op, and it still meets every record it must send to reconciliation.

A rebuild that is restarted (crash, lease taken over) writes into the same generation: applying only
newer versions makes the replay idempotent, so it resumes without orphaning keys.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

from aiokafka import ConsumerRecord, TopicPartition

from regions.core.positions import SourceKey, SourcePosition, merge_marks
from regions.kafka_clients import partitions_of, replay
from regions.projector import metrics
from regions.projector.cutoffs import record_cutoffs
from regions.projector.hints import resync_hint, sequence_base
from regions.projector.redis_control import (
    ProjectionControl,
    RebuildCause,
    RebuildRequest,
    RebuildState,
)
from regions.projector.totals import TotalsBatch, of_board
from regions.redis_projection import Positions, RedisProjection
from regions.settings import Settings
from schema.redis_keys import board_keys

log = logging.getLogger(__name__)
Pause = Callable[[], AbstractAsyncContextManager[object]]
PROGRESS_EVERY_S = 0.5


class ProjectionLost(Exception):
    """Redis lost the projection (its epoch changed) while a rebuild ran: this rebuild is void."""


@dataclass(frozen=True, slots=True)
class RebuildReport:
    boards: list[str]
    records: int  # totals offsets replayed from the beginning
    covered: dict[SourceKey, SourcePosition]  # positions made visible (none when it rebuilt one board)


async def begin_after_loss(
    projection: RedisProjection, control: ProjectionControl
) -> tuple[Positions, RebuildRequest]:
    """The projection has no epoch (new, or lost with Redis's data): start one that says rebuilding,
    and record the whole rebuild that will end it."""
    positions = await _start_epoch(projection, rebuilding=True)
    request = RebuildRequest.new(RebuildCause.LOST)
    await control.put_rebuild(request)
    metrics.PROJECTION_LOST.inc()
    return positions, request


async def _start_epoch(projection: RedisProjection, *, rebuilding: bool) -> Positions:
    epoch, base = uuid.uuid4().hex, sequence_base(time.time_ns() // 1000)
    await projection.start_epoch(epoch, sequence_base=base, rebuilding=rebuilding)
    return Positions(epoch, {}, None, rebuilding=rebuilding, sequence_base=base)


async def rebuild_to_run(
    projection: RedisProjection, control: ProjectionControl, *, first_life: bool = False
) -> tuple[Positions, RebuildRequest | None]:
    """What the lease holder must rebuild now: every board after a loss (with a new epoch when
    there is none), else the rebuild in progress or asked for, if any. A projection in its
    ``first_life`` (no projector ever committed a position) lost nothing: it starts an epoch and
    catches up live, its positions claiming only what it applied."""
    positions = await projection.positions()
    if positions.epoch is None and first_life:
        return await _start_epoch(projection, rebuilding=False), None
    if positions.epoch is None:
        return await begin_after_loss(projection, control)
    request = await control.rebuild()
    if positions.rebuilding and (
        request is None or not request.active or request.cause is not RebuildCause.LOST
    ):
        request = RebuildRequest.new(RebuildCause.LOST)
        await control.put_rebuild(request)
    return positions, request if request is not None and request.active else None


@dataclass(slots=True)
class _Into:
    """Applies replayed totals to the fresh keys and remembers what the replay covers."""

    projection: RedisProjection
    prefix: str
    region: str
    progress: _Progress
    covered: dict[SourceKey, SourcePosition] = field(default_factory=dict)
    cutoffs: dict[str, dict[str, int]] = field(default_factory=dict)  # close cutoffs the replay reached
    boards: set[str] = field(default_factory=set)
    skipped: int = 0

    async def __call__(self, records: list[ConsumerRecord]) -> None:
        request = self.progress.request
        batch = TotalsBatch(self.region)
        batch.add(records)
        if request.board:
            batch.only(request.board)
        self.covered = merge_marks(self.covered, batch.marks)
        for board, reached in batch.cutoffs.items():
            if not request.board or of_board(board, request.board):
                self.cutoffs.setdefault(board, {}).update(reached)
        self.skipped += len(batch.unprojectable)  # reconciled by the live projector when it met them
        work = batch.by_board(self.prefix, request.generation)
        self.boards.update(b for b, _, _ in work)
        if work:
            await self.projection.apply_many([(keys, t) for _, keys, t in work], sequenced=False)
        await self.progress.flush()


class _Progress:
    """Keeps the recorded request up to date (while replaying, at most every PROGRESS_EVERY_S)."""

    def __init__(
        self, control: ProjectionControl, request: RebuildRequest, show: Callable[[RebuildRequest], None]
    ) -> None:
        self.request = request
        self._control = control
        self._show = show
        self._replayed = (0, 0)
        self._next = 0.0

    async def to(self, state: RebuildState, **changes: int | str) -> None:
        self.request = self.request.to(state, **changes)
        await self._control.put_rebuild(self.request)
        self._show(self.request)

    def replayed(self, done: int, total: int) -> None:
        self._replayed = (done, total)
        metrics.REBUILD_PROGRESS.set(done / max(total, 1))

    async def flush(self) -> None:
        done, total = self._replayed
        if self.request.state is RebuildState.REPLAYING and time.monotonic() >= self._next:
            self._next = time.monotonic() + PROGRESS_EVERY_S
            await self.to(RebuildState.REPLAYING, done=done, total=total)


async def run_rebuild(
    settings: Settings,
    projection: RedisProjection,
    control: ProjectionControl,
    request: RebuildRequest,
    positions: Positions,
    *,
    pause: Pause | None = None,
    show: Callable[[RebuildRequest], None] = lambda request: None,
) -> RebuildReport:
    """Run ``request`` to its end (see the module's steps) on the projection of ``positions``'s
    epoch; ``pause()`` holds the live projector between two batches (None: there is none, and one
    replay is enough). Raises ProjectionLost."""
    started, cause = time.monotonic(), request.cause
    metrics.REBUILDING.labels(cause).set(1)
    progress = _Progress(control, request, show)
    try:
        report = await _run(settings, projection, progress, positions, pause)
    except Exception as exc:
        metrics.REBUILDS.labels(cause, "failed").inc()
        log.warning("rebuild %s (%s) did not finish: %r", request.id, cause, exc)
        if not isinstance(exc, ProjectionLost):  # the next lease holder resumes it; say why it stopped
            with contextlib.suppress(Exception):
                await control.put_rebuild(progress.request.to(progress.request.state, error=repr(exc)))
        raise
    finally:
        metrics.REBUILDING.labels(cause).set(0)
    metrics.REBUILDS.labels(cause, "done").inc()
    metrics.REBUILD_SECONDS.labels(cause).observe(time.monotonic() - started)
    return report


async def _run(
    settings: Settings,
    projection: RedisProjection,
    progress: _Progress,
    positions: Positions,
    pause: Pause | None,
) -> RebuildReport:
    request, kafka = progress.request, settings.kafka
    into = _Into(projection, settings.redis.key_prefix, settings.region, progress)
    topic = kafka.topic("totals")
    tps = [TopicPartition(topic, p) for p in await partitions_of(kafka, topic)]
    await progress.to(RebuildState.REPLAYING, done=0, total=0, error="")  # (re)started
    end = await replay(kafka, tps, into, progress=progress.replayed)
    records = sum(end.values())
    await progress.to(RebuildState.CATCHING_UP, done=records, total=records)
    if pause is None:  # nobody else writes: the replay holds everything the positions will claim
        await _swap_in(projection, into, positions)
    else:
        end = await replay(kafka, tps, into, start=end)
        paused = time.monotonic()
        async with pause():
            await replay(kafka, tps, into, start=end)
            await progress.to(RebuildState.SWAPPING)
            await _swap_in(projection, into, positions)
        metrics.LIVE_PAUSE_SECONDS.observe(time.monotonic() - paused)
    boards = sorted(into.boards)
    if into.skipped:
        log.warning("rebuild %s skipped %d unprojectable totals records", request.id, into.skipped)
    await progress.to(RebuildState.DONE, boards=len(boards), records=records)
    return RebuildReport(boards, records, {} if request.board else dict(into.covered))


async def _swap_in(projection: RedisProjection, into: _Into, positions: Positions) -> None:
    request, epoch = into.progress.request, positions.epoch or ""
    if (await projection.positions()).epoch != epoch:
        raise ProjectionLost(f"the projection's epoch changed during rebuild {request.id}")
    boards = sorted(into.boards)
    live = [board_keys(into.prefix, b) for b in boards]
    for board, keys in zip(boards, live, strict=True):
        await projection.swap(board_keys(into.prefix, board, request.generation), keys)
    whole = not request.board
    if (whole or request.cause is RebuildCause.LOST) and not await projection.advance(
        epoch, into.covered if whole else {}, completes_rebuild=request.cause is RebuildCause.LOST
    ):
        raise ProjectionLost(f"the projection's epoch changed while rebuild {request.id} swapped")
    if into.cutoffs:  # what the swapped boards hold reaches these cutoffs (a lost Redis lost them too)
        await record_cutoffs(projection.redis, into.prefix, into.cutoffs)
    sequences = await projection.next_sequences(live)
    await projection.publish_hints(
        [(b, resync_hint(b, positions.sequence_base + s)) for b, s in zip(boards, sequences, strict=True)]
    )


async def rebuild(
    settings: Settings,
    projection: RedisProjection,
    only_board: str | None = None,
    show: Callable[[RebuildRequest], None] = lambda request: None,
) -> RebuildReport:
    """Rebuild here, with no live projector: the caller holds the write lease, or knows that no
    projector runs. A rebuild in progress is resumed first; after a loss every board is rebuilt."""
    control = ProjectionControl(projection.redis, settings.redis.key_prefix)
    positions, request = await rebuild_to_run(projection, control)
    if request is None:
        request = RebuildRequest.new(RebuildCause.REQUESTED, only_board)
        await control.put_rebuild(request)
    return await run_rebuild(settings, projection, control, request, positions, show=show)
