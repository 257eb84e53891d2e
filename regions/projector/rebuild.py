"""Rebuilding the projection from the compacted totals topic, into fresh keys, swapped atomically.

Whoever holds the projection's write lease runs the rebuild recorded in Redis: the live projector,
or ``ops/lb rebuild`` when no projector runs (see ``redis_control``).

1. Replay the totals topic from the beginning into a fresh generation of keys, then from where that
   ended to the new end; the live keys keep answering and the live projector keeps projecting. The
   replay decodes a batch while Redis applies the batches before (``fresh_replay``, ``pipeline``).
2. Pause the live projector between two batches and replay the short tail to the end once more:
   the fresh keys now hold every version the live keys hold, or a newer one. (Compaction cannot
   hide a record from the replay: a record is removed only for a newer one with the same key that
   is older than ``min.compaction.lag.ms``, a minute, so that newer one was written before the end
   the replay reads to, as long as each catch-up takes less than a minute.)
3. Swap each board's layout in one step: its layout pointer names the fresh keys, and the old
   layout's scripts refuse from then on (``regions.stores.redis.layouts``); its keys are deleted in the
   background. A whole rebuild then moves the positions up to what the replay covered; after a
   loss, that same step clears ``rebuilding``, so a reader sees either a stale projection or the
   swapped boards with positions they cover. After a loss, a board still named live that the
   replay did not meet (none of its totals is left) has its layout retired too.
4. Send each swapped board one ``resync`` hint. The live projector resumes where it paused: what it
   applies again is a no-op, and it still meets every record it must send to reconciliation.

A reshard is a rebuild of one board into a layout of another shard count; before its swap it
verifies that the new layout holds every version the old one holds (``reshard``).

A rebuild that is restarted (crash, lease taken over) writes into the same generation: applying only
newer versions makes the replay idempotent, so it resumes without orphaning keys. A rebuild whose
fresh keys lose a shard (``ShardLost``: a Redis server restarted empty) is void like one that saw
the epoch change: the lease holder starts a new epoch and rebuilds every board.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from aiokafka import TopicPartition

from regions.core.boards import TiePolicy
from regions.core.positions import SourceKey, SourcePosition
from regions.core.reads import strip_of
from regions.projector import metrics
from regions.projector.fresh_replay import FreshReplay
from regions.projector.reshard import Reshard, ReshardRefused
from regions.runtime.settings import KafkaSettings, Settings
from regions.stores.kafka.clients import partitions_of
from regions.stores.redis.control import (
    ProjectionControl,
    RebuildCause,
    RebuildRequest,
    RebuildState,
)
from regions.stores.redis.cutoffs import record_cutoffs
from regions.stores.redis.layouts import ShardLost
from regions.stores.redis.positions import Positions
from regions.stores.redis.projection import RedisProjection
from schema.hints import resync_hint, sequence_base
from schema.redis_keys import LAYOUT_FORMAT

log = logging.getLogger(__name__)
Pause = Callable[[], AbstractAsyncContextManager[object]]
PROGRESS_EVERY_S = 0.5


class ProjectionLost(Exception):
    """Redis lost the projection (its epoch changed) while a rebuild ran: this rebuild is void."""


@dataclass(frozen=True, slots=True)
class RebuildReport:
    request: str  # the request's id
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
    if positions.layout != LAYOUT_FORMAT:
        log.warning("the projection is in key layout %s, this release reads layout %s: it rebuilds every "
                    "board into the new layout (reads say stale until it is done)", positions.layout, LAYOUT_FORMAT)  # fmt: skip
        return await begin_after_loss(projection, control)
    request = await control.rebuild()
    if positions.rebuilding and (
        request is None or not request.active or request.cause is not RebuildCause.LOST
    ):
        request = RebuildRequest.new(RebuildCause.LOST)
        await control.put_rebuild(request)
    return positions, request if request is not None and request.active else None


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

    async def verifying(self, done: int, total: int) -> None:
        await self.to(RebuildState.VERIFYING, done=done, total=total, verified=done)

    def replayed(self, done: int, total: int) -> None:
        self._replayed = (done, total)
        metrics.REBUILD_PROGRESS.set(done / max(total, 1))

    async def flush(self, checkpoint: Callable[[], str], final: bool = False) -> None:
        """Record the replay's progress and checkpoint, at most every PROGRESS_EVERY_S; ``final``:
        now, as the replay ended (so the record says what it read, however quick it was)."""
        done, total = self._replayed
        if self.request.state is RebuildState.REPLAYING and (final or time.monotonic() >= self._next):
            self._next = time.monotonic() + PROGRESS_EVERY_S
            await self.to(RebuildState.REPLAYING, done=done, total=total, resume=checkpoint())


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
    into = FreshReplay(projection, settings.redis.key_prefix, settings.region, progress)
    topic = kafka.topic("totals")
    tps = [TopicPartition(topic, p) for p in await partitions_of(kafka, topic)]
    start = None
    if request.state is RebuildState.REPLAYING and request.resume:  # interrupted: go on from there
        offsets = into.resume(request.resume)
        start = {tp: offsets[tp.partition] for tp in tps if tp.partition in offsets}
        log.info("rebuild %s resumes its replay at %s", request.id, sorted(offsets.items()))
    await progress.to(RebuildState.REPLAYING, done=0, total=0, error="")  # (re)started
    end = await into.replay(kafka, tps, start)
    await progress.flush(into.checkpoint, final=True)
    records = sum(end.values())
    await progress.to(RebuildState.CATCHING_UP, done=records, total=records)
    try:
        await _catch_up_and_swap(kafka, tps, end, into, progress, positions, pause)
    except ReshardRefused as exc:
        log.error("reshard %s refused: %s", request.id, exc)
        for board, layout in into.fresh.items():
            if board not in into.swapped:  # (a layout swapped in before a restart is the live one)
                await projection.layouts.discard(layout)
        await progress.to(RebuildState.DONE, boards=0, records=records, error=str(exc))
        return RebuildReport(request.id, [], records, {})
    boards = into.boards
    if into.skipped:
        log.warning("rebuild %s skipped %d unprojectable totals records", request.id, into.skipped)
    await progress.to(RebuildState.DONE, boards=len(boards), records=records)
    return RebuildReport(request.id, boards, records, {} if request.board else dict(into.covered))


async def _catch_up_and_swap(
    kafka: KafkaSettings,
    tps: list[TopicPartition],
    end: dict[TopicPartition, int],
    into: FreshReplay,
    progress: _Progress,
    positions: Positions,
    pause: Pause | None,
) -> None:
    projection = into.projection
    checks = await _reshard_checks(into)
    if pause is None:  # nobody else writes: the replay holds everything the positions will claim
        for check in checks:
            await check.verify(progress, every=True)
        await _swap_in(projection, into, positions)
        return
    end = await into.replay(kafka, tps, end)
    for check in checks:  # the whole layout before the pause, so that the pause stays short
        await check.verify(progress, every=True)
    paused = time.monotonic()
    async with pause():
        await into.replay(kafka, tps, end)
        for check in checks:
            await check.verify(progress, every=False)  # those behind before: now caught up
        await progress.to(RebuildState.SWAPPING)
        await _swap_in(projection, into, positions)
    metrics.LIVE_PAUSE_SECONDS.observe(time.monotonic() - paused)


async def _reshard_checks(into: FreshReplay) -> list[Reshard]:
    """The checks a reshard makes before its swap: one per board laid out anew that had a layout
    (the board, and the periods of a windowed one); none for a rebuild."""
    if into.progress.request.cause is not RebuildCause.RESHARD:
        return []
    live = await into.projection.layouts.live(into.fresh)
    return [
        Reshard(
            into.projection,
            into.prefix,
            old,
            into.fresh[board],
            strip_of(into.ties.get(board, TiePolicy.USER_ID)),
        )
        for board, old in live.items()
        if old is not None and old != into.fresh[board]
    ]


async def _swap_in(projection: RedisProjection, into: FreshReplay, positions: Positions) -> None:
    request, epoch = into.progress.request, positions.epoch or ""
    if (await projection.positions()).epoch != epoch:
        raise ProjectionLost(f"the projection's epoch changed during rebuild {request.id}")
    boards = into.boards
    for board in boards:
        await projection.layouts.swap(into.fresh[board])  # the old layout is deleted in the background
    whole = not request.board
    if whole and request.cause is RebuildCause.LOST:  # a board the totals no longer hold keeps nothing
        named = await projection.layouts.named()
        await projection.layouts.drop([x.board_id for x in named if x.board_id not in into.fresh])
    if (whole or request.cause is RebuildCause.LOST) and not await projection.advance(
        epoch, into.covered if whole else {}, completes_rebuild=request.cause is RebuildCause.LOST
    ):
        raise ProjectionLost(f"the projection's epoch changed while rebuild {request.id} swapped")
    if into.cutoffs:  # what the swapped boards hold reaches these cutoffs (a lost Redis lost them too)
        await record_cutoffs(projection.redis, into.prefix, into.cutoffs)
    sequences = await projection.next_sequences(boards)
    await projection.publish_hints(
        [(b, resync_hint(b, positions.sequence_base + s)) for b, s in zip(boards, sequences, strict=True)]
    )


async def rebuild(
    settings: Settings,
    projection: RedisProjection,
    only_board: str | None = None,
    show: Callable[[RebuildRequest], None] = lambda request: None,
    *,
    wanted: RebuildRequest | None = None,
) -> RebuildReport:
    """Rebuild here, with no live projector: the caller holds the write lease, or knows that no
    projector runs. A rebuild in progress is resumed first; after a loss every board is rebuilt.
    ``wanted``: the request to run when none is in progress (default: a rebuild of ``only_board``,
    or of every board)."""
    control = ProjectionControl(projection.redis, settings.redis.key_prefix)
    positions, request = await rebuild_to_run(projection, control)
    if request is None:
        request = wanted or RebuildRequest.new(RebuildCause.REQUESTED, only_board)
        await control.put_rebuild(request)
    try:
        return await run_rebuild(settings, projection, control, request, positions, show=show)
    except ShardLost as exc:  # the projection lost a part meanwhile: every board is rebuilt
        log.warning("%s: rebuilding every board", exc)
        positions, request = await begin_after_loss(projection, control)
        return await run_rebuild(settings, projection, control, request, positions, show=show)
