"""The replicator of one (source region -> this region) pair: the source's locally accepted awards,
partition to partition, into this region's ``awards.from-<source>`` topic, exactly once.

Each batch of copies is written with its checkpoint in one transaction on the local cluster (no
transaction spans two clusters, and a foreign cluster's consumer offsets cannot join one), so a
restart resumes from the checkpoint with nothing lost or doubled. The transactional id is fixed per
pair: a new instance fences every earlier one, which exits at its next transaction.

Readiness means the local cluster accepts this replicator's transactions; the source region may be
unreachable meanwhile (then the replicator keeps reconnecting and reports it in its metrics).
When the source deleted records before they were copied, the replicator writes a gap record and
continues from the source's log start: stopping would not bring the records back, and would leave
every later award of that region missing here too, while the gap record and metric make the loss
visible (in asOf and to alerts) so an operator can replay the missing awards from a backup.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError, OffsetOutOfRangeError, ProducerFenced
from aiokafka.producer.message_accumulator import BatchBuilder

from regions.health import Health
from regions.kafka_clients import make_producer, partitions_of, replay
from regions.settings import Settings
from replicator import metrics
from replicator.config import Pair, ReplicationStopped
from replicator.core import (
    BatchPlan,
    Gap,
    Headers,
    Rewound,
    SourceRecord,
    after_gap,
    lag,
    latest_checkpoints,
    plan_batch,
    resume,
)
from schema.replication import (
    CHECKPOINTS_TOPIC,
    GAP_KEY,
    HOP_HEADER,
    ORIGIN_HEADER,
    SOURCE_OFFSET_HEADER,
    SOURCE_PARTITION_HEADER,
    ReplicationCheckpoint,
    ReplicationCodec,
    ReplicationGap,
    checkpoint_key,
    replicated_awards_topic,
)

log = logging.getLogger(__name__)
BATCH_BYTES = 262_144
"""Largest record batch written: a few per partition and transaction (each one a round trip),
well below the brokers' default limit of 1 MiB per batch."""
Send = tuple[str, int, bytes | None, bytes | None, int | None, Headers]
"""topic, partition, key, value, timestamp (None: now), headers"""


class Fenced(ReplicationStopped):
    """Another instance of the same pair took over."""


class PartitionsMismatch(ReplicationStopped):
    """Source and local topics differ in partitions: partition p must be copied to partition p."""


class SourceRewound(ReplicationStopped):
    """A source partition ends before the checkpoint: its topic was recreated or truncated."""


class SourceUnavailable(Exception):
    """The source region did not answer; the replicator reconnects and stays ready."""


def _source_record(record: ConsumerRecord) -> SourceRecord:
    return SourceRecord(record.offset, record.key, record.value, record.timestamp, tuple(record.headers))


class Replicator:
    def __init__(self, settings: Settings, pair: Pair, health: Health) -> None:
        self._pair = pair
        self._cfg = settings.replicator
        self._local = settings.kafka
        self._source = settings.kafka.model_copy(update={"bootstrap_servers": pair.source_bootstrap_servers})
        self._health = health
        self._codec = ReplicationCodec()
        self.source_topic = settings.kafka.topic("awards")
        self.target_topic = settings.kafka.topic(replicated_awards_topic(pair.source))
        self.checkpoint_topic = settings.kafka.topic(CHECKPOINTS_TOPIC)
        self.transactional_id = f"{settings.kafka.topic_prefix}.replicator.{pair.local}.from-{pair.source}"
        self.ready = asyncio.Event()
        self.checkpoints: dict[int, ReplicationCheckpoint] = {}
        self._log_end: dict[int, int] = {}

    async def run(self, stop: asyncio.Event) -> None:
        """Copy until ``stop`` is set. Local Kafka errors propagate (the caller reruns from the
        checkpoints); conditions for an operator raise ``ReplicationStopped``."""
        partitions = await self._local_partitions()
        producer = make_producer(self._local, transactional_id=self.transactional_id, batch_bytes=BATCH_BYTES)
        try:
            # init_transactions fences every earlier instance of the pair and ends its open
            # transaction, so the checkpoints read next are final.
            await producer.start()
            self.checkpoints = await self._load_checkpoints(partitions)
            self._log_end = {p: c.next_offset for p, c in self.checkpoints.items()}
            self.ready.set()
            log.info("replicating %s -> %s from %s", self._pair.source, self._pair.local, self._positions())
            await self._follow_source(producer, partitions, stop)
        except ProducerFenced as exc:
            metrics.FENCED.labels(self._pair.source).inc()
            raise Fenced(
                f"replicator {self._pair.source} -> {self._pair.local} was fenced: another instance with "
                f"transactional id {self.transactional_id} started (or this one stalled past the transaction "
                "timeout) and continues from the checkpoints. Run one replicator per source and region."
            ) from exc
        finally:
            self.ready.clear()
            await producer.stop()

    def _positions(self) -> dict[int, int]:
        return {p: c.next_offset for p, c in sorted(self.checkpoints.items())}

    async def _local_partitions(self) -> list[int]:
        """The local topic's partitions; the checkpoint topic must have the same (checkpoints are
        co-partitioned with the copies)."""
        target = await partitions_of(self._local, self.target_topic)
        checkpoints = await partitions_of(self._local, self.checkpoint_topic)
        if target != checkpoints:
            raise PartitionsMismatch(
                f"{self.target_topic} has {len(target)} partitions and {self.checkpoint_topic} {len(checkpoints)}; "
                "they must be equal"
            )
        return target

    async def _load_checkpoints(self, partitions: list[int]) -> dict[int, ReplicationCheckpoint]:
        written: list[ReplicationCheckpoint] = []

        async def keep(records: list[ConsumerRecord]) -> None:
            written.extend(self._codec.checkpoint(r.value) for r in records)

        tps = [TopicPartition(self.checkpoint_topic, p) for p in partitions]
        await replay(self._local, tps, keep)
        return latest_checkpoints(self._pair.source, partitions, written)

    async def _follow_source(
        self, producer: AIOKafkaProducer, partitions: list[int], stop: asyncio.Event
    ) -> None:
        """Copy from the source, reconnecting with backoff while it is unreachable."""
        delay = 1.0
        while not stop.is_set():
            consumer = self._source_consumer()
            try:
                try:
                    await consumer.start()
                    await self._check_source(partitions)
                except KafkaError as exc:
                    raise SourceUnavailable(repr(exc)) from exc
                delay = 1.0
                await self._copy(consumer, producer, partitions, stop)
            except SourceUnavailable as exc:
                metrics.SOURCE_REACHABLE.labels(self._pair.source).set(0)
                log.warning(
                    "source region %s unavailable (%s); retrying in %.0fs", self._pair.source, exc, delay
                )
                await _wait(stop, delay)
                delay = min(delay * 2, self._cfg.source_retry_max_s)
            finally:
                await consumer.stop()

    def _source_consumer(self) -> AIOKafkaConsumer:
        """Manual assignment, committed data only, and no automatic reset: a position the source no
        longer holds raises, so the gap is reported instead of skipped."""
        return AIOKafkaConsumer(
            bootstrap_servers=self._source.bootstrap_servers,
            group_id=None,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="none",
            request_timeout_ms=self._cfg.source_timeout_ms,
            client_id=f"replicator-{self._pair.local}-from-{self._pair.source}",
        )

    async def _check_source(self, partitions: list[int]) -> None:
        source = await partitions_of(self._source, self.source_topic)
        if source != partitions:
            raise PartitionsMismatch(
                f"{self.source_topic} in region {self._pair.source} has {len(source)} partitions and "
                f"{self.target_topic} here has {len(partitions)}; every region needs the same count"
            )

    async def _copy(
        self,
        consumer: AIOKafkaConsumer,
        producer: AIOKafkaProducer,
        partitions: list[int],
        stop: asyncio.Event,
    ) -> None:
        tps = [TopicPartition(self.source_topic, p) for p in partitions]
        await self._resume(consumer, producer, tps)
        consumer.assign(tps)
        for tp in tps:  # before the fetcher runs: with no reset policy it needs a position
            consumer.seek(tp, self.checkpoints[tp.partition].next_offset)
        probe = asyncio.create_task(self._probe(consumer, tps, stop))
        try:
            while not stop.is_set():
                try:
                    batch = await consumer.getmany(timeout_ms=200, max_records=self._cfg.max_batch)
                except OffsetOutOfRangeError as exc:
                    out = sorted(exc.args[0], key=lambda tp: tp.partition)
                    await self._resume(consumer, producer, out)
                    for tp in out:
                        consumer.seek(tp, self.checkpoints[tp.partition].next_offset)
                    continue
                except KafkaError as exc:
                    raise SourceUnavailable(repr(exc)) from exc
                if batch:
                    await self._commit(producer, batch)
                if probe.done():
                    await probe  # raises what ended it
        finally:
            probe.cancel()

    async def _resume(
        self, consumer: AIOKafkaConsumer, producer: AIOKafkaProducer, tps: Sequence[TopicPartition]
    ) -> None:
        """Check each partition's checkpoint against the source's log; report gaps in one transaction."""
        try:
            starts = await consumer.beginning_offsets(list(tps))
            ends = await consumer.end_offsets(list(tps))
        except KafkaError as exc:
            raise SourceUnavailable(repr(exc)) from exc
        gaps: dict[int, Gap] = {}
        for tp in tps:
            outcome = resume(self.checkpoints[tp.partition].next_offset, starts[tp], ends[tp])
            if isinstance(outcome, Rewound):
                raise SourceRewound(
                    f"{self.source_topic} partition {tp.partition} in region {self._pair.source} ends at "
                    f"offset {outcome.log_end}, before this region's checkpoint {outcome.checkpoint}: the source "
                    "topic was recreated or truncated. Its offsets no longer name what was copied; "
                    f"decide what to replay, then reset the checkpoint in {self.checkpoint_topic}"
                )
            if isinstance(outcome, Gap):
                gaps[tp.partition] = outcome
            self._log_end[tp.partition] = ends[tp]
        if gaps:
            await self._report_gaps(producer, gaps)

    async def _report_gaps(self, producer: AIOKafkaProducer, gaps: dict[int, Gap]) -> None:
        now_ms = int(time.time() * 1000)
        after = {p: after_gap(self.checkpoints[p], gap) for p, gap in gaps.items()}
        sends: list[Send] = []
        for p, gap in gaps.items():
            record = ReplicationGap(
                source_region=self._pair.source, source_partition=p, first_missing=gap.first_missing,
                first_available=gap.first_available, detected_at_ms=now_ms,
            )  # fmt: skip
            headers = (
                (ORIGIN_HEADER, self._pair.source.encode()),
                (SOURCE_PARTITION_HEADER, str(p).encode()),
                (SOURCE_OFFSET_HEADER, str(gap.first_available - 1).encode()),
                (HOP_HEADER, b"1"),
            )
            sends.append((self.target_topic, p, GAP_KEY, self._codec.encode(record), None, headers))
            sends.append(self._checkpoint_send(after[p]))
        await self._transaction(producer, sends)
        for p, gap in gaps.items():
            self.checkpoints[p] = after[p]
            metrics.GAPS.labels(self._pair.source, str(p)).inc()
            metrics.MISSING.labels(self._pair.source, str(p)).inc(gap.missing)
            log.error(
                "gap: %s partition %d in region %s lost offsets %d..%d before they were copied (%d records); "
                "continuing from %d",
                self.source_topic, p, self._pair.source, gap.first_missing, gap.first_available - 1,
                gap.missing, gap.first_available,
            )  # fmt: skip

    def _checkpoint_send(self, checkpoint: ReplicationCheckpoint) -> Send:
        p = checkpoint.source_partition
        return (
            self.checkpoint_topic,
            p,
            checkpoint_key(self._pair.source, p),
            self._codec.encode(checkpoint),
            None,
            (),
        )

    async def _commit(
        self, producer: AIOKafkaProducer, batch: dict[TopicPartition, list[ConsumerRecord]]
    ) -> None:
        """One transaction: every partition's copies, then its checkpoint."""
        plans: dict[int, BatchPlan] = {}
        sends: list[Send] = []
        for tp, records in sorted(batch.items(), key=lambda item: item[0].partition):
            p = tp.partition
            plan = plan_batch(self._pair.source, p, self.checkpoints[p], [_source_record(r) for r in records])
            if plan.checkpoint == self.checkpoints[p]:
                continue
            plans[p] = plan
            sends += [(self.target_topic, p, c.key, c.value, c.timestamp_ms, c.headers) for c in plan.copies]
            sends.append(self._checkpoint_send(plan.checkpoint))
        if not plans:
            return
        await self._transaction(producer, sends)
        now = time.time()
        for p, plan in plans.items():
            self.checkpoints[p] = plan.checkpoint
            self._log_end[p] = max(self._log_end.get(p, 0), plan.checkpoint.next_offset)
            metrics.COPIED.labels(self._pair.source, str(p)).inc(len(plan.copies))
            metrics.SKIPPED.labels(self._pair.source, str(p)).inc(plan.skipped)
            for copy in plan.copies:
                metrics.COPY_LATENCY.labels(self._pair.source).observe(
                    max(0.0, now - copy.timestamp_ms / 1000)
                )
        self._report_lag()

    async def _transaction(self, producer: AIOKafkaProducer, sends: list[Send]) -> None:
        """Write ``sends`` in one transaction, as whole record batches per partition (far less work
        per record than one send each); within a partition the order is kept."""
        try:
            async with producer.transaction():
                futures: list[asyncio.Future[object]] = []
                open_batches: dict[tuple[str, int], BatchBuilder] = {}
                for topic, p, key, value, timestamp_ms, headers in sends:
                    batch = open_batches.get((topic, p))
                    record = {"timestamp": timestamp_ms, "key": key, "value": value, "headers": list(headers)}
                    if batch is None or batch.append(**record) is None:
                        if batch is not None:
                            futures.append(await producer.send_batch(batch, topic, partition=p))
                        batch = open_batches[(topic, p)] = producer.create_batch()
                        if batch.append(**record) is None:
                            raise ValueError(f"a record of {len(value or b'')} bytes does not fit a batch")
                for (topic, p), batch in open_batches.items():
                    futures.append(await producer.send_batch(batch, topic, partition=p))
                # Every batch settles before the first failure is raised, so none goes unobserved.
                settled = await asyncio.gather(*futures, return_exceptions=True)
                failures = [r for r in settled if isinstance(r, BaseException)]
                if failures:
                    raise failures[0]
        except BaseException:
            metrics.ABORTS.labels(self._pair.source).inc()
            raise

    async def _probe(
        self, consumer: AIOKafkaConsumer, tps: list[TopicPartition], stop: asyncio.Event
    ) -> None:
        """Read the source's end offsets now and then: lag metrics, and whether the source answers."""
        reachable = metrics.SOURCE_REACHABLE.labels(self._pair.source)
        while not stop.is_set():
            try:
                ends = await consumer.end_offsets(tps)
            except KafkaError as exc:
                reachable.set(0)
                log.debug("source offsets unavailable: %r", exc)
            else:
                reachable.set(1)
                self._log_end = {tp.partition: ends[tp] for tp in tps}
            self._report_lag()
            await _wait(stop, self._cfg.lag_interval_s)

    def _report_lag(self) -> None:
        now_ms = int(time.time() * 1000)
        records: dict[int, int] = {}
        for p, checkpoint in self.checkpoints.items():
            end = max(self._log_end.get(p, 0), checkpoint.next_offset)
            behind = lag(checkpoint, end, now_ms)
            labels = (self._pair.source, str(p))
            records[p] = behind.records
            metrics.LAG_RECORDS.labels(*labels).set(behind.records)
            metrics.LAG_SECONDS.labels(*labels).set(
                float("nan") if behind.seconds is None else behind.seconds
            )
            metrics.CHECKPOINT.labels(*labels).set(checkpoint.next_offset)
            metrics.SOURCE_END.labels(*labels).set(end)
        self._health.report_lag(f"{self._pair.source}:{self.source_topic}", records)


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    """Sleep up to ``seconds``, waking early when ``stop`` is set."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
