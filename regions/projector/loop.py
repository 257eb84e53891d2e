"""The projector: totals (read_committed) into the Redis projection, versioned and idempotent.

Replays, redelivery and duplicates are harmless: the Lua script applies a total only when its
version is newer. Positions (asOf) advance only after the totals before them are applied; hints are
published after that, and only while Redis still holds the epoch they were built on.

The projector writes only while it holds the projection's write lease. When Redis loses the
projection (its epoch is gone), or a part of it (a shard whose keys are gone while its layout is
named live: on a Redis Cluster, a master that does not hold the epoch restarted empty; found by a
write that the shard refuses, or on each tick), the projector starts a new epoch that says
``rebuilding`` (every read is stale), pauses its live loop and rebuilds every board into fresh
keys, which it swaps in when they have caught up (see ``rebuild``). A rebuild asked for by
``ops/lb rebuild`` runs next to the live loop, which it pauses only for its last catch-up and the
swap. Records that cannot be projected go to the reconciliation topic and the partition continues.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
import time

import msgspec
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition

from regions.core.positions import SourceKey, SourcePosition, merge_marks
from regions.projector import metrics
from regions.projector.rebuild import (
    ProjectionLost,
    RebuildReport,
    begin_after_loss,
    rebuild_to_run,
    run_rebuild,
)
from regions.projector.totals import TotalsBatch, Unprojectable
from regions.runtime.health import Health
from regions.runtime.settings import Settings
from regions.stores.kafka.clients import (
    FetchPace,
    assign_from_committed,
    consumer_lag,
    make_consumer,
    make_producer,
    partitions_of,
    stop_consumer,
)
from regions.stores.redis.control import Lease, ProjectionControl, RebuildRequest
from regions.stores.redis.cutoffs import record_cutoffs
from regions.stores.redis.layouts import ShardLost, listpack_advice
from regions.stores.redis.positions import Positions
from regions.stores.redis.projection import ApplyResult, RedisProjection
from schema.hints import changes_hint
from schema.records import Reconciliation

log = logging.getLogger(__name__)
TICK_S = 2.0  # lag report, epoch and shard checks (Redis may lose data while idle), rebuild requests
COMMIT_S = 1.0
"""Offsets are committed at most this often (the first at once): a restart replays what was applied
since, which changes nothing (applies are versioned) and costs a second of totals at most."""
DELETE_PAUSE_S = 0.002  # between two commands deleting a retired layout's keys


class Projector:
    def __init__(
        self, settings: Settings, projection: RedisProjection, control: ProjectionControl, health: Health
    ) -> None:
        self._settings = settings
        self._kafka = settings.kafka
        self._projection = projection
        self._control = control
        self._health = health
        self._prefix = settings.redis.key_prefix
        self._group = f"{self._kafka.topic_prefix}.projector.{settings.region}"
        self._encode = msgspec.msgpack.Encoder().encode
        self._positions = Positions(None, {}, None)  # the epoch this projector builds on
        self._visible: dict[SourceKey, SourcePosition] = {}  # positions this projector knows to be visible
        self._live = asyncio.Lock()  # held for each batch; a rebuild holds it to catch up and swap
        self._rebuild: asyncio.Task[RebuildReport] | None = None
        self._deleting: asyncio.Task[None] | None = None  # of layouts swapped out (rebuilds, reshards)
        self._fetched_at_ms: int | None = None  # write time of the oldest record fetched, not yet visible
        self._uncommitted: dict[TopicPartition, int] = {}  # offsets applied, not yet committed
        self._committed_at: float | None = None
        metrics.OLDEST_UNPROJECTED.set_function(self._oldest_unprojected_s)
        self.running = asyncio.Event()

    def _oldest_unprojected_s(self) -> float:
        fetched = self._fetched_at_ms
        return 0.0 if fetched is None else max(0.0, time.time() - fetched / 1000)

    async def run(self, stop: asyncio.Event) -> None:
        holder = f"projector {socket.gethostname()} pid {os.getpid()}"
        lease = Lease(self._control, holder, self._settings.projector.lease_ttl_s)
        if not await lease.acquire(
            stop, lambda other: log.info("waiting for %s to release the projection", other)
        ):
            return
        metrics.LEASE_HELD.set(1)
        for advice in await listpack_advice(self._projection.redis):
            log.warning("the projection's version buckets need compact hashes: %s", advice)
        consumer = make_consumer(self._kafka, group_id=self._group, fetch_wait_ms=self._kafka.fetch_wait_ms)
        producer = make_producer(self._kafka)
        try:
            await consumer.start()
            await producer.start()
            topic = self._kafka.topic("totals")
            tps = [TopicPartition(topic, p) for p in await partitions_of(self._kafka, topic)]
            await assign_from_committed(consumer, tps)
            first_life = all([await consumer.committed(tp) is None for tp in tps])
            self._positions, request = await rebuild_to_run(
                self._projection, self._control, first_life=first_life
            )
            self._visible = dict(self._positions.marks)
            if request is not None:
                self._start_rebuild(request)
            self.running.set()
            await self._loop(stop, consumer, producer, tps, lease)
        finally:
            self.running.clear()
            await self._cancel_rebuild()
            if self._deleting is not None:
                self._deleting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._deleting
            await stop_consumer(consumer)
            await producer.stop()
            await lease.release()
            metrics.LEASE_HELD.set(0)

    async def _loop(
        self,
        stop: asyncio.Event,
        consumer: AIOKafkaConsumer,
        producer: AIOKafkaProducer,
        tps: list[TopicPartition],
        lease: Lease,
    ) -> None:
        loop, next_tick = asyncio.get_running_loop(), 0.0
        pace = FetchPace(consumer, self._kafka)
        while not stop.is_set():
            await self._collect_rebuild()
            if not self._positions.rebuilding:
                polled = await consumer.getmany(
                    *tps, timeout_ms=100, max_records=self._settings.projector.max_batch
                )
                pace.after(polled)
                if any(polled.values()):
                    async with self._live:
                        await self._project(consumer, producer, lease, polled)
            elif self._rebuild is not None:
                await asyncio.wait([self._rebuild], timeout=0.1)  # after a loss the live loop waits
            else:
                next_tick = 0.0  # rebuilding after a loss, and no rebuild runs: find out why now
            if loop.time() >= next_tick:
                next_tick = loop.time() + TICK_S
                await self._tick(consumer, tps)
                await self._commit(consumer)  # what a quiet second left uncommitted
        await self._commit(consumer, now=True)

    async def _tick(self, consumer: AIOKafkaConsumer, tps: list[TopicPartition]) -> None:
        self._health.report_lag(self._kafka.topic("totals"), await consumer_lag(consumer, tps))
        if self._deleting is None or self._deleting.done():
            self._deleting = asyncio.create_task(self._delete_retired())
        if (await self._projection.positions()).epoch != self._positions.epoch:
            await self._lost("the projection has no epoch (new or lost Redis data)")  # lost while idle
        elif not self._positions.rebuilding and (lost := await self._lost_shards()):
            await self._lost(f"{lost} lost the keys of a shard (a Redis server restarted empty)")
        elif self._rebuild is None:
            positions, request = await rebuild_to_run(self._projection, self._control)
            if positions.epoch != self._positions.epoch:  # lost between the two reads: a new epoch began
                self._visible = {}
            self._positions = positions
            if request is not None:
                self._start_rebuild(request)

    async def _project(
        self,
        consumer: AIOKafkaConsumer,
        producer: AIOKafkaProducer,
        lease: Lease,
        polled: dict[TopicPartition, list[ConsumerRecord]],
    ) -> None:
        """Apply a batch, advance positions, publish hints, commit the offsets."""
        batch = TotalsBatch(self._settings.region)
        for records in polled.values():
            batch.add(records)
            metrics.TOTALS_READ.inc(len(records))
        self._fetched_at_ms = min(rs[0].timestamp for rs in polled.values() if rs)
        if batch.unprojectable:
            await self._reconcile(producer, batch.unprojectable)
        await lease.check()
        try:
            applied = await self._apply(batch)
        except ShardLost as exc:  # (what the batch applied to other shards is right: versioned)
            await self._lost(f"{exc} (a Redis server restarted empty)")
        else:
            if not applied:
                await self._lost("the projection has no epoch (new or lost Redis data)")
        self._uncommitted |= {tp: rs[-1].offset + 1 for tp, rs in polled.items() if rs}
        self._fetched_at_ms = None
        await self._commit(consumer)

    async def _commit(self, consumer: AIOKafkaConsumer, *, now: bool = False) -> None:
        """Commit the offsets applied, once ``COMMIT_S`` has passed since the last commit (or ``now``)."""
        clock = asyncio.get_running_loop().time()
        due = now or self._committed_at is None or clock >= self._committed_at + COMMIT_S
        if self._uncommitted and due:
            await consumer.commit(self._uncommitted)
            self._uncommitted, self._committed_at = {}, clock

    async def _apply(self, batch: TotalsBatch) -> bool:
        """Apply, advance, then publish hints; False when Redis lost the epoch meanwhile (what this
        batch wrote into the emptied Redis is removed again: only a rebuild may fill it)."""
        work = batch.by_board()
        results = await self._projection.apply_live(work) if work else []
        epoch = self._positions.epoch or ""
        if (work or batch.marks) and not await self._projection.advance(epoch, batch.marks):
            await self._projection.drop([w.board_id for w in work])
            return False
        if batch.cutoffs:  # after the totals before them: a board with every cutoff reached is final
            await record_cutoffs(self._projection.redis, self._prefix, batch.cutoffs)
        self._observe_freshness(batch)
        metrics.TOTALS_APPLIED.inc(sum(len(r.users) for r in results))
        await self._publish_hints(batch, [w.board_id for w in work], results)
        return True

    def _observe_freshness(self, batch: TotalsBatch) -> None:
        """Acceptance to visibility, for each position whose newest award moved forward (not for a
        heartbeat, nor a replay of what a rebuild already made visible), by accepting region."""
        now_ms = time.time() * 1000
        for key, mark in batch.marks.items():
            visible = self._visible.get(key)
            if visible is not None and mark.accepted_at_ms <= visible.accepted_at_ms:
                self._visible[key] = visible.merged(mark)
                continue
            self._visible[key] = mark if visible is None else visible.merged(mark)
            if mark.accepted_at_ms > 0:
                freshness = max(0.0, now_ms - mark.accepted_at_ms) / 1000
                metrics.FRESHNESS.labels(key[0]).observe(freshness)

    async def _publish_hints(self, batch: TotalsBatch, boards: list[str], results: list[ApplyResult]) -> None:
        base, hints = self._positions.sequence_base, []
        offsets = {key: mark.offset for key, mark in batch.marks.items()}
        for board_id, result in zip(boards, results, strict=True):
            if result.sequence:
                # (an erased player's removal names nobody: a hint's readers learn the board changed)
                changed = [batch.latest[key] for u in result.users if (key := (board_id, u)) in batch.latest]
                hints.append((board_id, changes_hint(board_id, base + result.sequence, offsets, changed)))
        await self._projection.publish_hints(hints)

    async def _reconcile(self, producer: AIOKafkaProducer, records: list[Unprojectable]) -> None:
        """Send records the projection cannot use to reconciliation, acknowledged before the batch
        is committed: the partition goes on and nothing is dropped silently."""
        topic, sends = self._kafka.topic("reconciliation"), []
        for u in records:
            log.error(
                "totals record at %s cannot be projected (%s: %s): sent to reconciliation",
                u.where,
                u.reason,
                u.detail,
            )
            metrics.UNPROJECTABLE.labels(u.reason).inc()
            value = self._encode(
                Reconciliation(reason="unprojectable_total", detail=f"{u.reason} at {u.where}: {u.detail}",
                               award=None, source_partition=u.partition, source_offset=u.offset,
                               source_topic=u.topic, raw=u.raw)
            )  # fmt: skip
            sends.append(await producer.send(topic, value, key=u.key))
        await asyncio.gather(*sends)

    async def _lost_shards(self) -> str:
        """The boards with a shard that lost its keys (comma separated; empty: none), checked while
        no batch or swap runs."""
        async with self._live:
            layouts = self._projection.layouts
            return ", ".join(layout.board_id for layout in await layouts.lost(await layouts.named()))

    async def _lost(self, why: str) -> None:
        """Redis no longer holds this projector's epoch, or a part of the projection: begin a new
        epoch and rebuild every board."""
        log.warning("%s: rebuilding every board", why)
        await self._cancel_rebuild()
        self._projection.layouts.forget()
        self._positions, request = await begin_after_loss(self._projection, self._control)
        self._visible = {}
        self._start_rebuild(request)

    async def _delete_retired(self) -> None:
        """Delete the keys of layouts swapped out, a few at a time, next to the live loop."""
        try:
            deleted = await self._projection.layouts.delete_retired(pause_s=DELETE_PAUSE_S)
        except Exception as exc:  # (a cluster's errors are not all RedisErrors) the next tick tries again
            log.warning("could not delete the keys of layouts swapped out (%r); trying again", exc)
            return
        if deleted:
            log.info("deleted the keys of %d layout(s) swapped out", deleted)

    def _start_rebuild(self, request: RebuildRequest) -> None:
        log.info("rebuild %s (%s, %s) starts", request.id, request.cause, request.board or "every board")
        self._rebuild = asyncio.create_task(
            run_rebuild(self._settings, self._projection, self._control, request, self._positions,
                        pause=lambda: self._live)
        )  # fmt: skip

    async def _cancel_rebuild(self) -> None:
        task, self._rebuild = self._rebuild, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _collect_rebuild(self) -> None:
        """Take a finished rebuild's outcome."""
        task = self._rebuild
        if task is None or not task.done():
            return
        self._rebuild = None
        if task.cancelled() or isinstance(task.exception(), ProjectionLost):
            return  # the next epoch check starts over
        if isinstance(task.exception(), ShardLost):
            await self._lost(f"rebuild: {task.exception()} (a Redis server restarted empty)")
            return
        report = task.result()  # raises what stopped it: the projector restarts and resumes it
        self._positions = dataclasses.replace(self._positions, rebuilding=False)
        self._visible = merge_marks(self._visible, report.covered)
        log.info("rebuild done: %d board(s) from %d totals offsets", len(report.boards), report.records)
