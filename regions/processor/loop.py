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
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from aiokafka import (
    AIOKafkaConsumer,
    AIOKafkaProducer,
    ConsumerRebalanceListener,
    ConsumerRecord,
    TopicPartition,
)
from aiokafka.structs import RecordMetadata

from regions.core.forgetting import forget_before, should_forget
from regions.processor import metrics
from regions.processor.restore import Restored, restore
from regions.processor.task import FORGET_BATCH, Output, Round, Source
from regions.runtime.health import Health
from regions.runtime.settings import Settings
from regions.stores.kafka.clients import cluster_id, make_consumer, make_producer, partitions_of
from regions.stores.rocksdb import open_store, store_options
from regions.stores.task_state import MemoryStore, StoreIdentity, TaskStore
from schema.records import Codec
from schema.replication import replicated_awards_topic

log = logging.getLogger(__name__)
FORGET_STEP_MS = 60_000
"""The dedupe memory forgets in steps of this much stream time (one scan of its time index each)."""


class PartitionsMismatch(RuntimeError):
    """Every source and changelog must have the same partitions, or state would land elsewhere."""


@dataclass(slots=True, eq=False)
class OwnedTask:
    """Partition p of every source, owned here: the producer that fences its earlier owners, its
    store, and the offset each source partition continues from."""

    partition: int
    producer: AIOKafkaProducer
    store: TaskStore
    next_offsets: dict[TopicPartition, int]
    restored: Restored
    committed_at: float = 0.0
    remembered: int = 0  # copies the dedupe memory holds (approximate: restored records, then counted)


class Processor:
    def __init__(self, settings: Settings, health: Health) -> None:
        self._settings = settings
        self._kafka = kafka = settings.kafka
        self._health = health
        self._cfg = settings.processor
        self._group = f"{kafka.topic_prefix}.processor.{settings.region}"
        self._codec = Codec()
        remote = sorted(r for r in settings.regions if r != settings.region)
        self.sources = {
            s.topic: s
            for s in [Source(kafka.topic("awards"), settings.region, False)]
            + [Source(kafka.topic(replicated_awards_topic(r)), r, True) for r in remote]
        }
        self.changelogs = (kafka.topic("totals"), kafka.topic("dedupe"))
        self._store_options = store_options(self._cfg.store_cache_mib, self._cfg.store_write_buffer_mib)
        self._cluster = ""
        self.owned: dict[int, OwnedTask] = {}
        # Tasks being taken over (fenced, restored) outside the rebalance callback: their source
        # partitions stay paused until they are owned, and the consumer keeps polling meanwhile.
        self._acquiring: dict[int, asyncio.Task[OwnedTask]] = {}
        self.restored = asyncio.Event()
        # Held while a round's transactions run and while ownership changes, so a task is never
        # handed over in the middle of a transaction.
        self._lock = asyncio.Lock()
        self._rebalancing = True
        self._failure: BaseException | None = None

    def transactional_id(self, partition: int) -> str:
        return f"{self._group}.p{partition}"

    def identity(self, partition: int) -> StoreIdentity:
        return StoreIdentity(self._cluster, self.changelogs, partition)

    async def prepare(self) -> None:
        """Check the topics are co-partitioned and learn the cluster: before any task is taken."""
        changelog = self.changelogs[0]
        found = {
            topic: await partitions_of(self._kafka, topic) for topic in [*self.sources, *self.changelogs]
        }
        expected = found[changelog]
        for topic, partitions in found.items():
            if partitions != expected:
                raise PartitionsMismatch(
                    f"{topic} has {len(partitions)} partitions and {changelog} has {len(expected)}; they must "
                    "be equal. Fix the topics before starting the processor."
                )
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
            offsets = await self._committed(consumer, partition)
        except BaseException:
            if store is not None:
                store.close()
            await producer.stop()
            raise
        return OwnedTask(partition, producer, store, offsets, done, remembered=done.remembered)

    async def _committed(self, consumer: AIOKafkaConsumer, partition: int) -> dict[TopicPartition, int]:
        tps = [TopicPartition(topic, partition) for topic in self.sources]
        beginning = await consumer.beginning_offsets(tps)
        offsets = {}
        for tp in tps:
            committed = await consumer.committed(tp)
            offsets[tp] = committed if committed is not None else beginning[tp]
        return offsets

    async def take(self, consumer: AIOKafkaConsumer, assigned: Iterable[TopicPartition]) -> None:
        """Own exactly the tasks of ``assigned``: release the others, acquire the new ones, and
        continue each source partition from where its task stands. The consumer only logs a
        listener's exception, so a failure is handed to the processing loop, which raises it."""
        try:
            await self._take(consumer, assigned)
        except Exception as exc:
            self._failure = exc

    async def _take(self, consumer: AIOKafkaConsumer, assigned: Iterable[TopicPartition]) -> None:
        """Release what is no longer assigned and start taking over what is new. A takeover (fencing,
        restoring the store: minutes for a large partition) runs outside the rebalance callback, its
        source partitions paused meanwhile, so the consumer goes on polling and the group stays
        stable however long a restore takes (``adopt`` finishes it)."""
        async with self._lock:
            assigned = list(assigned)
            wanted = {tp.partition for tp in assigned}
            for partition in [p for p in self.owned if p not in wanted]:
                await self._release(self.owned.pop(partition))
            for partition in [p for p in self._acquiring if p not in wanted]:
                acquiring = self._acquiring.pop(partition)
                acquiring.cancel()  # (its store and producer are closed as it ends)
                await asyncio.gather(acquiring, return_exceptions=True)
            for partition in sorted(p for p in wanted if p not in self.owned and p not in self._acquiring):
                self._acquiring[partition] = asyncio.create_task(self._acquire(consumer, partition))
            for tp in assigned:
                if tp.partition in self._acquiring:
                    consumer.pause(tp)
                else:
                    # A task kept across the rebalance keeps its store: if anyone owned it meanwhile, they
                    # fenced this producer, the next commit fails, and the rerun replays their changes.
                    consumer.seek(tp, self.owned[tp.partition].next_offsets[tp])
            self._rebalancing = False
            self._settled()

    async def adopt(self, consumer: AIOKafkaConsumer) -> None:
        """Own the tasks whose takeover finished: continue each of their source partitions from where
        the task stands. A takeover that failed is raised (the process reruns)."""
        done = [p for p, t in self._acquiring.items() if t.done()]
        if not done:
            return
        async with self._lock:
            if self._rebalancing:
                return  # the next assignment says whether they are still this instance's
            for partition in done:
                acquiring = self._acquiring.pop(partition, None)
                if acquiring is None or acquiring.cancelled():
                    continue
                task = acquiring.result()  # raises the takeover's failure
                self.owned[partition] = task
                for tp, offset in task.next_offsets.items():
                    consumer.seek(tp, offset)
                    consumer.resume(tp)
            self._settled()

    async def settle(self, consumer: AIOKafkaConsumer) -> None:
        """Until every takeover under way has ended and its task is owned (for a caller that assigns
        partitions itself and drives ``process_task``, instead of ``run``)."""
        await asyncio.gather(*self._acquiring.values(), return_exceptions=True)
        await self.adopt(consumer)

    def _settled(self) -> None:
        if not self._acquiring and not self._rebalancing:
            self.restored.set()
            log.info("owning partitions %s", sorted(self.owned))

    @staticmethod
    async def _release(task: OwnedTask) -> None:
        task.store.close()
        await task.producer.stop()

    async def pause(self) -> None:
        """Stop processing until the next assignment, once the round in flight has committed: a new
        owner fences this instance's producers only after every member has paused. Tasks are
        released when the assignment is known, so those that stay here keep their store."""
        async with self._lock:
            self._rebalancing = True
            self.restored.clear()

    async def process_task(self, task: OwnedTask, batch: dict[TopicPartition, list[ConsumerRecord]]) -> Round:
        """One transaction for one task's records of every source; the store is written after commit."""
        fold = Round(self._kafka, self._codec, task.store, task.partition, self._cfg.dedupe_horizon_s * 1000,
                     honour_cutoffs=self._cfg.honour_cutoffs,
                     forget_event_ids=self._cfg.fault_forget_event_ids)  # fmt: skip
        self._forget(task, fold)
        for tp, records in batch.items():
            source = self.sources[tp.topic]
            for record in records:
                fold.add(source, record)
        out = fold.out + fold.watermarks()
        # The coordinator writes commit markers after it answers; a transaction begun before they are
        # written is refused (CONCURRENT_TRANSACTIONS) and the client backs off 20 ms.
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, task.committed_at + self._cfg.commit_gap_ms / 1000 - loop.time()))
        started = loop.time()
        async with task.producer.transaction():
            # Everything stays on the task's partition: the changelogs are co-partitioned with the sources.
            ends = await _send_batched(task.producer, task.partition, out)
            await task.producer.send_offsets_to_transaction(fold.offsets, self._group)
        task.committed_at = loop.time()
        metrics.TRANSACTION_SECONDS.observe(task.committed_at - started)
        changelog = {topic: end for topic, end in ends.items() if topic in self.changelogs}
        task.store.write(fold.store_batch(changelog))
        task.next_offsets.update(fold.offsets)
        task.remembered += fold.counts["dedupe_remembered"] - fold.counts["dedupe_forgotten"]
        _count(fold)
        return fold

    def _forget(self, task: OwnedTask, fold: Round) -> None:
        """Let the round forget remembered copies that every source has passed by the horizon and its
        margin, in stream time (``regions.core.forgetting``); a lagging source holds them all."""
        regions = {source.region for source in self.sources.values()}
        before = forget_before(task.store.sources(), regions, self._cfg.dedupe_retention_ms)
        if before is not None and should_forget(before, task.store.complete_since_ms(), FORGET_STEP_MS):
            fold.forget(task.store.oldest_seen(before, FORGET_BATCH), before)

    def _report_memory(self) -> None:
        now_ms = time.time() * 1000
        for task in self.owned.values():
            oldest = task.store.oldest_seen(2**62, 1)
            label = str(task.partition)
            metrics.DEDUPE_REMEMBERED.labels(label).set(task.remembered)
            metrics.DEDUPE_OLDEST_AGE.labels(label).set(
                max(0.0, (now_ms - oldest[0][1]) / 1000) if oldest else 0
            )

    async def _report_lag(self, consumer: AIOKafkaConsumer) -> None:
        """Records not yet committed, per source topic and owned partition (also what is owned)."""
        tps = [tp for task in self.owned.values() for tp in task.next_offsets]
        end = await consumer.end_offsets(tps) if tps else {}
        for topic in self.sources:
            lag = {
                task.partition: max(0, end[tp] - task.next_offsets[tp])
                for task in self.owned.values()
                for tp in task.next_offsets
                if tp.topic == topic
            }
            self._health.report_lag(topic, lag)

    async def _round(self, consumer: AIOKafkaConsumer) -> None:
        batch = await consumer.getmany(timeout_ms=100, max_records=self._cfg.max_batch)
        # Which task the records were fetched for: ownership may change before the lock.
        fetched_for = {tp: self.owned.get(tp.partition) for tp in batch}
        async with self._lock:
            work: dict[int, dict[TopicPartition, list[ConsumerRecord]]] = {}
            for tp, records in batch.items() if not self._rebalancing else ():
                task = fetched_for[tp]
                if task is None or self.owned.get(tp.partition) is not task:
                    continue
                fresh = [r for r in records if r.offset >= task.next_offsets[tp]]
                if fresh:
                    work.setdefault(tp.partition, {})[tp] = fresh
            rounds = [self.process_task(self.owned[p], records) for p, records in work.items()]
            # Every task's transaction settles before a failure is raised.
            failures = [
                r
                for r in await asyncio.gather(*rounds, return_exceptions=True)
                if isinstance(r, BaseException)
            ]
            if failures:
                raise failures[0]

    async def run(self, stop: asyncio.Event) -> None:
        """Join the group and process until ``stop`` is set. Raises on Kafka errors (the caller reruns,
        which brings every store up to the changelogs again)."""
        self.restored.clear()
        self._failure = None
        await self.prepare()
        consumer = make_consumer(
            self._kafka,
            group_id=self._group,
            session_timeout_ms=self._cfg.session_timeout_ms,
            co_partitioned=True,
        )
        consumer.subscribe(list(self.sources), listener=_Ownership(self, consumer))
        await consumer.start()
        try:
            loop = asyncio.get_running_loop()
            next_lag = 0.0
            while not stop.is_set():
                if self._failure is not None:
                    raise self._failure
                await self.adopt(consumer)
                await self._round(consumer)
                if loop.time() >= next_lag:
                    await self._report_lag(consumer)
                    self._report_memory()
                    next_lag = loop.time() + 2
        finally:
            self.restored.clear()
            await consumer.stop()
            await self.close()

    async def close(self) -> None:
        """Release every task (stores closed, producers stopped), and end the takeovers under way."""
        async with self._lock:
            for acquiring in self._acquiring.values():
                acquiring.cancel()
            await asyncio.gather(*self._acquiring.values(), return_exceptions=True)
            self._acquiring.clear()
            for task in self.owned.values():
                await self._release(task)
            self.owned.clear()


async def _send_batched(producer: AIOKafkaProducer, partition: int, out: list[Output]) -> dict[str, int]:
    """Send ``out`` to ``partition`` of each topic, one record batch per topic (a batch costs far less
    than a send per record); returns each topic's offset after its last record."""
    by_topic: dict[str, list[tuple[bytes, bytes | None]]] = {}
    for topic, key, value in out:
        by_topic.setdefault(topic, []).append((key, value))
    sent: list[tuple[str, int, asyncio.Future[RecordMetadata]]] = []
    for topic, records in by_topic.items():
        batch, count = producer.create_batch(), 0
        for key, value in records:
            if batch.append(key=key, value=value, timestamp=None) is None:  # full: send it, start another
                sent.append((topic, count, await producer.send_batch(batch, topic, partition=partition)))
                batch, count = producer.create_batch(), 0
                batch.append(key=key, value=value, timestamp=None)
            count += 1
        sent.append((topic, count, await producer.send_batch(batch, topic, partition=partition)))
    ends: dict[str, int] = {}
    for topic, count, future in sent:
        base = (await future).offset  # a batch's metadata names its first record
        ends[topic] = max(ends.get(topic, 0), base + count)
    return ends


def _count(fold: Round) -> None:
    for what, n in fold.counts.items():
        if what == "applied":
            metrics.AWARDS_APPLIED.inc(n)
        elif what == "duplicate":
            metrics.REPEATS_IGNORED.inc(n)
        elif what == "dedupe_forgotten":
            metrics.DEDUPE_PURGED.inc(n)
        elif what == "copy_replaced":
            metrics.COPIES_REPLACED.inc(n)
        elif what == "dedupe_remembered":
            pass
        elif what.startswith("reconciled:"):
            metrics.RECONCILED.labels(what.removeprefix("reconciled:")).inc(n)
        else:
            metrics.CONTROL_RECORDS.labels(what).inc(n)


class _Ownership(ConsumerRebalanceListener):  # type: ignore[misc]
    """Keeps the processor's owned tasks equal to the group's assignment."""

    def __init__(self, processor: Processor, consumer: AIOKafkaConsumer) -> None:
        self._processor = processor
        self._consumer = consumer

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        await self._processor.pause()

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        await self._processor.take(self._consumer, assigned)
