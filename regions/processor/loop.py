"""The stateful processor: awards in, versioned absolute totals out, exactly once.

A region's processor folds its local awards topic and the ``awards.from-<region>`` topic of every
other region, co-partitioned: partition p of every source is one task, with one state store, one
transactional id and one transaction per round. Instances form one consumer group whose range
assignment gives partition p of every source to the same member; the group moves tasks when an
instance joins, leaves or goes silent. Whoever takes a task over fences every earlier owner (a
crashed instance, or a paused one the group already gave up on) and aborts its open transaction
before it brings the task's store up to the changelogs.

Per task and round, one Kafka transaction holds the totals (the changelog of player state), the
dedupe changelog, the applied-award audit feed, reconciliation records, a watermark per (region,
partition) read and the consumer offsets of every source partition. The store is written only after
the commit succeeded, with the changelog offsets it then reflects; on any failure the process
reruns, and each store replays the changelogs' tail from its own offsets.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from pathlib import Path

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, ConsumerRecord, TopicPartition

from regions.core.resume import Gap, Resume, Rewound, resume
from regions.processor.ownership import OwnedTask, TaskOwnership
from regions.processor.reports import report_deleted, report_lag, report_memory
from regions.processor.restore import restore
from regions.processor.round import Round, Source
from regions.processor.transactions import TaskTransactions
from regions.runtime.cadence import Cadence
from regions.runtime.health import Health
from regions.runtime.settings import Settings
from regions.stores.kafka.clients import (
    FetchPace,
    cluster_id,
    make_consumer,
    make_producer,
    partitions_of,
    stop_consumer,
)
from regions.stores.kafka.topics import PartitionsMismatch, partitions_differ
from regions.stores.rocksdb import open_store, store_options
from regions.stores.task_state import MemoryStore, StoreIdentity, TaskStore
from schema.records import HEARTBEAT_KEY
from schema.replication import replicated_awards_topic

log = logging.getLogger(__name__)


class Processor:
    def __init__(self, settings: Settings, health: Health) -> None:
        self._settings = settings
        self._kafka = kafka = settings.kafka
        self._health = health
        self._cfg = settings.processor
        self._group = f"{kafka.topic_prefix}.processor.{settings.region}"
        remote = sorted(r for r in settings.regions if r != settings.region)
        self.sources = {
            s.topic: s
            for s in [Source(kafka.topic("awards"), settings.region, False)]
            + [Source(kafka.topic(replicated_awards_topic(r)), r, True) for r in remote]
        }
        self.changelogs = (kafka.topic("totals"), kafka.topic("dedupe"))
        self._store_options = store_options(self._cfg.store_cache_mib, self._cfg.store_write_buffer_mib)
        self._cluster = ""
        self._tasks = TaskOwnership(self._acquire, on_adopted=self._report_found)
        self._transactions = TaskTransactions(settings, self.sources, self.changelogs, self._group)

    @property
    def owned(self) -> dict[int, OwnedTask]:
        return self._tasks.owned

    @property
    def restored(self) -> asyncio.Event:
        """Set while every task assigned to this instance is owned (restored) and processing."""
        return self._tasks.restored

    def transactional_id(self, partition: int) -> str:
        return f"{self._group}.p{partition}"

    def identity(self, partition: int) -> StoreIdentity:
        return StoreIdentity(self._cluster, self.changelogs, partition)

    async def prepare(self) -> None:
        """Check that every source and changelog has ``kafka.partitions`` partitions (so they are
        co-partitioned too) and learn the cluster: before any task is taken."""
        counts = {
            topic: len(await partitions_of(self._kafka, topic)) for topic in [*self.sources, *self.changelogs]
        }
        wrong = partitions_differ(self._kafka, counts)
        if wrong is not None:
            raise PartitionsMismatch(wrong)
        self._cluster = await cluster_id(self._kafka)

    def _open_store(self, partition: int) -> TaskStore:
        if self._cfg.store == "memory":
            return MemoryStore()
        base = Path(self._cfg.store_dir) / self._kafka.topic_prefix / self._settings.region
        return open_store(base, f"p{partition}", self._store_options)

    async def _acquire(self, consumer: AIOKafkaConsumer, partition: int) -> OwnedTask:
        """Take a task over: fence its earlier owners first, then restore, then find the offsets."""
        producer = make_producer(self._kafka, transactional_id=self.transactional_id(partition))
        # init_transactions bumps the epoch of this transactional id: an earlier owner can no longer
        # commit, and its open transaction is aborted before the changelogs are read.
        await producer.start()
        store: TaskStore | None = None
        try:
            store = self._open_store(partition)
            done = await restore(
                self._kafka, store, self.identity(partition), retention_ms=self._cfg.dedupe_retention_ms
            )
            log.info(
                "partition %d restored (%s%s): %d changelog records in %.2f s",
                partition, done.mode, f": {done.reason}" if done.reason else "", done.records, done.seconds,
            )  # fmt: skip
            offsets, deleted = await self._continue_at(consumer, partition)
        except BaseException:
            if store is not None:
                store.close()
            await producer.stop()
            raise
        return OwnedTask(partition, producer, store, offsets, done, remembered=done.remembered, deleted=deleted)

    async def _continue_at(
        self, consumer: AIOKafkaConsumer, partition: int
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, Gap]]:
        """Where each source partition of the task continues (``regions.core.resume``): from its
        committed offset (0 when none), past what retention deleted unread (reported), or from the
        start of a topic made again since."""
        tps = [TopicPartition(topic, partition) for topic in self.sources]
        starts, ends = await consumer.beginning_offsets(tps), await consumer.end_offsets(tps)
        offsets, deleted = {}, {}
        for tp in tps:
            outcome = resume(await consumer.committed(tp) or 0, starts[tp], ends[tp])
            if isinstance(outcome, Gap):
                deleted[tp] = outcome  # reported once the task is adopted
            elif isinstance(outcome, Rewound):
                log.error("%s partition %d ends at %d, before the committed offset %d: the topic was made "
                          "again; reading it from its start", tp.topic, tp.partition, outcome.log_end,
                          outcome.checkpoint)  # fmt: skip
            offsets[tp] = outcome.offset if isinstance(outcome, Resume) else starts[tp]
        return offsets, deleted

    def _report_found(self, task: OwnedTask) -> None:
        """What the takeover of an adopted task found deleted unread."""
        for tp, gap in task.deleted.items():
            report_deleted(self.sources[tp.topic], tp, gap)

    async def _deleted_unread(
        self, consumer: AIOKafkaConsumer, batch: dict[TopicPartition, list[ConsumerRecord]]
    ) -> None:
        """Find records retention deleted while the task was behind: the consumer then moves on to the
        oldest record left by itself, so a fetch starts further than one offset (a transaction's
        marker) past what the task has read. Such a jump is checked against the log's start."""
        jumped: dict[TopicPartition, tuple[OwnedTask, int]] = {}
        for tp, records in batch.items():
            task = self.owned.get(tp.partition)
            if task is not None and tp not in task.deleted:
                held = task.held.get(tp)
                expected = held[-1].offset + 1 if held else task.next_offsets[tp]
                first = next((r.offset for r in records if r.offset >= expected), None)
                if first is not None and first > expected + 1:
                    jumped[tp] = (task, expected)
        if not jumped:
            return
        starts = await consumer.beginning_offsets(list(jumped))
        for tp, (task, expected) in jumped.items():
            outcome = resume(expected, starts[tp], batch[tp][-1].offset + 1)
            if isinstance(outcome, Gap):
                report_deleted(self.sources[tp.topic], tp, outcome)
                task.deleted[tp] = outcome

    async def take(self, consumer: AIOKafkaConsumer, assigned: Iterable[TopicPartition]) -> None:
        """Own exactly the tasks of ``assigned`` (``TaskOwnership.take``); a failure is raised by ``run``."""
        await self._tasks.take(consumer, assigned)

    async def settle(self, consumer: AIOKafkaConsumer) -> None:
        """Until every takeover under way has ended and its task is owned (for a caller that assigns
        partitions itself and drives ``process_task``, instead of ``run``)."""
        await self._tasks.settle(consumer)

    async def pause(self) -> None:
        """Stop processing until the next assignment, once the round in flight has committed: a new
        owner fences this instance's producers only after every member has paused. Tasks are
        released when the assignment is known, so those that stay here keep their store."""
        await self._tasks.pause()

    async def close(self) -> None:
        """Release every task (stores closed, producers stopped), and end the takeovers under way."""
        await self._tasks.close()

    async def process_task(self, task: OwnedTask, batch: dict[TopicPartition, list[ConsumerRecord]]) -> Round:
        """One transaction for one task's records of every source; the store is written after commit."""
        return await self._transactions.process(task, batch)

    async def _round(self, consumer: AIOKafkaConsumer, pace: FetchPace) -> bool:
        """One round: what was fetched, one transaction per task it holds records of; whether any did."""
        batch = await consumer.getmany(timeout_ms=100, max_records=self._cfg.max_batch)
        pace.after(batch)
        await self._deleted_unread(consumer, batch)
        # Which task the records were fetched for: ownership may change before the lock.
        fetched_for = {tp: self.owned.get(tp.partition) for tp in batch}
        async with self._tasks.lock:
            now = asyncio.get_running_loop().time()
            for tp, records in batch.items() if not self._tasks.rebalancing else ():
                task = fetched_for[tp]
                if task is None or self.owned.get(tp.partition) is not task:
                    continue
                fresh = [r for r in records if r.offset >= task.next_offsets[tp]]
                if fresh:
                    if not task.held:
                        task.held_since = now
                    task.held.setdefault(tp, []).extend(fresh)
            work = {p: t.held for p, t in self.owned.items() if t.held and self._due(t, now)}
            for p in work:
                self.owned[p].held = {}
            rounds = [self.process_task(self.owned[p], records) for p, records in work.items()]
            # Every task's transaction settles before a failure is raised.
            failures = [
                r
                for r in await asyncio.gather(*rounds, return_exceptions=True)
                if isinstance(r, BaseException)
            ]
            if failures:
                raise failures[0]
            return bool(work)

    def _due(self, task: OwnedTask, now: float) -> bool:
        """Whether the task's held records are folded in this round: at once when they hold anything
        but heartbeats; heartbeats alone (an idle partition) once every source has one held, or once
        the oldest has waited ``idle_round_interval_ms``. The regions' heartbeats come at the same
        interval, so an idle partition commits about one transaction per heartbeat interval carrying
        every region's heartbeat, and a heartbeat waits at most the idle interval (a region that is
        cut off or slow only makes the others wait that long)."""
        if any(r.key != HEARTBEAT_KEY for records in task.held.values() for r in records):
            return True
        if len(task.held) == len(self.sources):
            return True
        return now >= task.held_since + self._cfg.idle_round_interval_ms / 1000

    async def run(self, stop: asyncio.Event) -> None:
        """Join the group and process until ``stop`` is set. Raises on Kafka errors (the caller reruns,
        which brings every store up to the changelogs again)."""
        self._tasks.begin()
        await self.prepare()
        consumer = make_consumer(
            self._kafka,
            group_id=self._group,
            session_timeout_ms=self._cfg.session_timeout_ms,
            co_partitioned=True,
            fetch_wait_ms=int(self._cfg.round_interval_ms),
        )
        consumer.subscribe(list(self.sources), listener=_RebalanceListener(self, consumer))
        await consumer.start()
        try:
            pace = FetchPace(consumer, self._kafka)
            loop = asyncio.get_running_loop()
            next_lag = 0.0
            cadence = Cadence(self._cfg.round_interval_ms / 1000, self._cfg.busy_round_interval_ms / 1000)
            while not stop.is_set():
                self._tasks.raise_failure()
                await self._tasks.adopt(consumer)
                cadence.begin()
                await cadence.end(await self._round(consumer, pace))
                if loop.time() >= next_lag:
                    await report_lag(consumer, self._health, self.sources, self.owned.values())
                    report_memory(self.owned.values())
                    next_lag = loop.time() + 2
        finally:
            self.restored.clear()
            await stop_consumer(consumer)
            await self.close()


class _RebalanceListener(ConsumerRebalanceListener):  # type: ignore[misc]
    """Keeps the processor's owned tasks equal to the group's assignment."""

    def __init__(self, processor: Processor, consumer: AIOKafkaConsumer) -> None:
        self._processor = processor
        self._consumer = consumer

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        await self._processor.pause()

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        await self._processor.take(self._consumer, assigned)
