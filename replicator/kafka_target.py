"""This region's side of a replicator: the topic of copies and the checkpoints, written together.

Every write is one transaction of the pair's fixed transactional id: copies and the checkpoint that
covers them commit or abort together, and opening the producer fences every earlier instance.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping

from aiokafka import AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.errors import IllegalOperation, KafkaError
from aiokafka.producer.message_accumulator import BatchBuilder

from regions.core.resume import Gap
from regions.runtime.settings import KafkaSettings
from regions.stores.kafka.clients import make_producer, partitions_of, replay
from replicator import metrics
from replicator.config import Pair, ReplicationStopped
from replicator.core import BatchPlan, Headers, latest_checkpoints, provenance
from schema.replication import (
    CHECKPOINTS_TOPIC,
    GAP_KEY,
    ReplicationCheckpoint,
    ReplicationCodec,
    ReplicationGap,
    checkpoint_key,
    replicated_awards_topic,
)

BATCH_BYTES = 262_144
"""Largest record batch written: a few per partition and transaction (each one a round trip),
well below the brokers' default limit of 1 MiB per batch."""
Send = tuple[str, int, bytes | None, bytes | None, int | None, Headers]
"""topic, partition, key, value, timestamp (None: now), headers"""


class PartitionsMismatch(ReplicationStopped):
    """Topics differ in partitions: partition p must be copied to partition p."""


class LocalTopics:
    def __init__(self, kafka: KafkaSettings, pair: Pair) -> None:
        self._kafka, self._pair = kafka, pair
        self._codec = ReplicationCodec()
        self.copies_topic = kafka.topic(replicated_awards_topic(pair.source))
        self.checkpoint_topic = kafka.topic(CHECKPOINTS_TOPIC)
        self.transactional_id = f"{kafka.topic_prefix}.replicator.{pair.local}.from-{pair.source}"
        self._producer: AIOKafkaProducer | None = None

    async def open(self) -> None:
        """Start the producer: this fences every earlier instance of the pair and ends its open
        transaction, so the checkpoints read afterwards are final."""
        self._producer = make_producer(
            self._kafka, transactional_id=self.transactional_id, batch_bytes=BATCH_BYTES
        )
        await self._producer.start()

    async def close(self) -> None:
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None

    async def partitions(self) -> list[int]:
        """The partitions of the copies' topic; the checkpoint topic must have the same, as a
        partition's checkpoints are written to the partition of its copies."""
        copies = await partitions_of(self._kafka, self.copies_topic)
        checkpoints = await partitions_of(self._kafka, self.checkpoint_topic)
        if copies != checkpoints:
            raise PartitionsMismatch(
                f"{self.copies_topic} has {len(copies)} partitions and {self.checkpoint_topic} "
                f"{len(checkpoints)}; they must be equal"
            )
        return copies

    async def checkpoints(self, partitions: list[int]) -> dict[int, ReplicationCheckpoint]:
        """Each partition's last committed checkpoint of this pair (offset 0 when none)."""
        written: list[ReplicationCheckpoint] = []

        async def keep(records: list[ConsumerRecord]) -> None:
            written.extend(self._codec.checkpoint(r.value) for r in records)

        await replay(self._kafka, [TopicPartition(self.checkpoint_topic, p) for p in partitions], keep)
        return latest_checkpoints(self._pair.source, partitions, written)

    async def write(self, plans: Mapping[int, BatchPlan]) -> None:
        """One transaction: each partition's copies, then its checkpoint."""
        sends: list[Send] = []
        for p, plan in plans.items():
            sends += [(self.copies_topic, p, c.key, c.value, c.timestamp_ms, c.headers) for c in plan.copies]
            sends.append(self._checkpoint(plan.checkpoint))
        await self._transaction(sends)

    async def write_gaps(self, gaps: Mapping[int, tuple[Gap, ReplicationCheckpoint]], now_ms: int) -> None:
        """One transaction: a gap record in each partition's copies, then its checkpoint after the gap.
        The gap record's source offset is the last one it accounts for."""
        sends: list[Send] = []
        for p, (gap, after) in gaps.items():
            record = ReplicationGap(
                source_region=self._pair.source, source_partition=p, first_missing=gap.first_missing,
                first_available=gap.first_available, detected_at_ms=now_ms,
            )  # fmt: skip
            headers = provenance(self._pair.source, p, gap.first_available - 1)
            sends.append((self.copies_topic, p, GAP_KEY, self._codec.encode(record), now_ms, headers))
            sends.append(self._checkpoint(after))
        await self._transaction(sends)

    def _checkpoint(self, checkpoint: ReplicationCheckpoint) -> Send:
        p = checkpoint.source_partition
        key = checkpoint_key(self._pair.source, p)
        return (self.checkpoint_topic, p, key, self._codec.encode(checkpoint), None, ())

    async def _transaction(self, sends: list[Send]) -> None:
        """Write ``sends`` in one transaction, as whole record batches per partition (far less work
        per record than one send each); within a partition the order is kept."""
        producer = self._producer
        if producer is None:
            raise RuntimeError("LocalTopics.open() must come before a write")
        try:
            async with producer.transaction(), _sends_refused_as_their_cause(producer):
                futures: list[asyncio.Future[object]] = []
                batches: dict[tuple[str, int], BatchBuilder] = {}
                for topic, p, key, value, timestamp_ms, headers in sends:
                    batch = batches.get((topic, p))
                    record = {"timestamp": timestamp_ms, "key": key, "value": value, "headers": list(headers)}
                    if batch is None or batch.append(**record) is None:
                        if batch is not None:
                            futures.append(await producer.send_batch(batch, topic, partition=p))
                        batch = batches[(topic, p)] = producer.create_batch()
                        if batch.append(**record) is None:
                            raise ValueError(f"a record of {len(value or b'')} bytes does not fit a batch")
                for (topic, p), batch in batches.items():
                    futures.append(await producer.send_batch(batch, topic, partition=p))
                # Every batch settles before the first failure is raised, so none goes unobserved.
                settled = await asyncio.gather(*futures, return_exceptions=True)
                failures = [r for r in settled if isinstance(r, BaseException)]
                if failures:
                    raise failures[0]
        except BaseException:
            metrics.ABORTS.labels(self._pair.source).inc()
            raise


@contextlib.asynccontextmanager
async def _sends_refused_as_their_cause(producer: AIOKafkaProducer) -> AsyncIterator[None]:
    """Once aiokafka's sender has ended a transaction (its producer fenced, or an error that aborts the
    transaction), the next send is refused with ``IllegalOperation``, which names only the symptom;
    raise the sender's own error instead, so a fenced replicator stops as fenced and anything else
    is retried from the checkpoints."""
    try:
        yield
    except IllegalOperation as refused:
        task = producer._sender.sender_task  # the only place aiokafka keeps the cause
        cause = task.exception() if task is not None and task.done() and not task.cancelled() else None
        raise (cause or KafkaError(f"the transaction ended under a send: {refused}")) from refused
