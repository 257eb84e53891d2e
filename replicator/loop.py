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

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError, OffsetOutOfRangeError, ProducerFenced

from regions.core.resume import Gap, Rewound, resume
from regions.runtime.cadence import Cadence
from regions.runtime.health import Health
from regions.runtime.settings import Settings
from regions.stores.kafka.clients import FetchPace, live_fetch, partitions_of, stop_consumer
from regions.stores.kafka.security import connection_options
from replicator import metrics
from replicator.config import Pair, ReplicationStopped
from replicator.core import BatchPlan, SourceRecord, after_gap, plan_batch
from replicator.kafka_target import LocalTopics, PartitionsMismatch
from schema.replication import ReplicationCheckpoint

log = logging.getLogger(__name__)


class Fenced(ReplicationStopped):
    """Another instance of the same pair took over."""


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
        self._source = settings.region_kafka(pair.source)
        self._health = health
        self.source_topic = settings.kafka.topic("awards")
        self.ready = asyncio.Event()
        self.checkpoints: dict[int, ReplicationCheckpoint] = {}
        self._log_end: dict[int, int] = {}
        self._source_answers = True  # as far as known: the last request to the source was answered

    async def run(self, stop: asyncio.Event) -> None:
        """Copy until ``stop`` is set. Local Kafka errors propagate (the caller reruns from the
        checkpoints); conditions for an operator raise ``ReplicationStopped``."""
        local = LocalTopics(self._local, self._pair)
        try:
            partitions = await local.partitions()
            await local.open()
            self.checkpoints = await local.checkpoints(partitions)
            self._log_end = {p: c.next_offset for p, c in self.checkpoints.items()}
            self.ready.set()
            log.info("replicating %s -> %s from %s", self._pair.source, self._pair.local,
                     {p: c.next_offset for p, c in sorted(self.checkpoints.items())})  # fmt: skip
            await self._follow_source(local, partitions, stop)
        except ProducerFenced as exc:
            metrics.FENCED.labels(self._pair.source).inc()
            raise Fenced(
                f"replicator {self._pair.source} -> {self._pair.local} was fenced: another instance with "
                f"transactional id {local.transactional_id} started (or this one stalled past the transaction "
                "timeout) and continues from the checkpoints. Run one replicator per source and region."
            ) from exc
        finally:
            self.ready.clear()
            await local.close()

    async def _follow_source(self, local: LocalTopics, partitions: list[int], stop: asyncio.Event) -> None:
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
                await self._copy(consumer, local, partitions, stop)
            except SourceUnavailable as exc:
                self._source_answered(False, exc, quiet=True)  # said just below, with the retry
                self._report_lag()
                log.warning(
                    "source region %s unavailable (%s); retrying in %.0fs", self._pair.source, exc, delay
                )
                await _wait(stop, delay)
                delay = min(delay * 2, self._cfg.source_retry_max_s)
            finally:
                await stop_consumer(consumer)

    def _source_consumer(self) -> AIOKafkaConsumer:
        """Manual assignment, committed data only, and no automatic reset: a position the source no
        longer holds raises, so the gap is reported instead of skipped. The source's brokers are
        reached with this region's TLS and SASL settings (one set of client credentials per region)."""
        return AIOKafkaConsumer(
            bootstrap_servers=self._source.bootstrap_servers,
            **connection_options(self._source),
            **live_fetch(self._source, int(self._cfg.round_interval_ms)),
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
                f"{self.source_topic} in region {self._pair.source} has {len(source)} partitions and this "
                f"region's copies have {len(partitions)}; every region needs the same count"
            )

    async def _copy(
        self, consumer: AIOKafkaConsumer, local: LocalTopics, partitions: list[int], stop: asyncio.Event
    ) -> None:
        tps = [TopicPartition(self.source_topic, p) for p in partitions]
        await self._resume(consumer, local, tps)
        consumer.assign(tps)
        for tp in tps:  # before the fetcher runs: with no reset policy it needs a position
            consumer.seek(tp, self.checkpoints[tp.partition].next_offset)
        probe = asyncio.create_task(self._probe(consumer, tps, stop))
        cadence = Cadence(self._cfg.round_interval_ms / 1000, self._cfg.busy_round_interval_ms / 1000)
        pace = FetchPace(consumer, self._source)
        try:
            while not stop.is_set():
                cadence.begin()
                try:
                    batch = await consumer.getmany(timeout_ms=200, max_records=self._cfg.max_batch)
                    pace.after(batch)
                except OffsetOutOfRangeError as exc:
                    out = sorted(exc.args[0], key=lambda tp: tp.partition)
                    await self._resume(consumer, local, out)
                    for tp in out:
                        consumer.seek(tp, self.checkpoints[tp.partition].next_offset)
                    continue
                except KafkaError as exc:
                    raise SourceUnavailable(repr(exc)) from exc
                if batch:
                    await self._commit(local, batch)
                if probe.done():
                    await probe  # raises what ended it
                await cadence.end(bool(batch))
        finally:
            probe.cancel()

    async def _resume(
        self, consumer: AIOKafkaConsumer, local: LocalTopics, tps: Sequence[TopicPartition]
    ) -> None:
        """Check each partition's checkpoint against the source's log; report gaps in one transaction."""
        try:
            starts = await consumer.beginning_offsets(list(tps))
            ends = await consumer.end_offsets(list(tps))
        except KafkaError as exc:
            raise SourceUnavailable(repr(exc)) from exc
        gaps: dict[int, tuple[Gap, ReplicationCheckpoint]] = {}
        for tp in tps:
            checkpoint = self.checkpoints[tp.partition]
            outcome = resume(checkpoint.next_offset, starts[tp], ends[tp])
            if isinstance(outcome, Rewound):
                raise SourceRewound(
                    f"{self.source_topic} partition {tp.partition} in region {self._pair.source} ends at "
                    f"offset {outcome.log_end}, before this region's checkpoint {outcome.checkpoint}: the source "
                    "topic was recreated or truncated. Its offsets no longer name what was copied; "
                    f"decide what to replay, then reset the checkpoint in {local.checkpoint_topic}"
                )
            if isinstance(outcome, Gap):
                gaps[tp.partition] = (outcome, after_gap(checkpoint, outcome))
            self._log_end[tp.partition] = ends[tp]
        if gaps:
            await local.write_gaps(gaps, int(time.time() * 1000))
            for p, (gap, after) in gaps.items():
                self.checkpoints[p] = after
                metrics.GAPS.labels(self._pair.source, str(p)).inc()
                metrics.MISSING.labels(self._pair.source, str(p)).inc(gap.missing)
                log.error(
                    "gap: %s partition %d in region %s lost offsets %d..%d before they were copied "
                    "(%d records); continuing from %d",
                    self.source_topic, p, self._pair.source, gap.first_missing, gap.first_available - 1,
                    gap.missing, gap.first_available,
                )  # fmt: skip

    async def _commit(self, local: LocalTopics, batch: dict[TopicPartition, list[ConsumerRecord]]) -> None:
        """One transaction: every partition's copies, then its checkpoint."""
        plans: dict[int, BatchPlan] = {}
        for tp, records in sorted(batch.items(), key=lambda item: item[0].partition):
            p = tp.partition
            plan = plan_batch(self._pair.source, p, self.checkpoints[p], [_source_record(r) for r in records])
            if plan.checkpoint != self.checkpoints[p]:
                plans[p] = plan
        if not plans:
            return
        await local.write(plans)
        now = time.time()
        latency = metrics.COPY_LATENCY.labels(self._pair.source)
        for p, plan in plans.items():
            self.checkpoints[p] = plan.checkpoint
            self._log_end[p] = max(self._log_end.get(p, 0), plan.checkpoint.next_offset)
            metrics.COPIED.labels(self._pair.source, str(p)).inc(len(plan.copies))
            metrics.SKIPPED.labels(self._pair.source, str(p)).inc(plan.skipped)
            for copy in plan.copies:
                latency.observe(max(0.0, now - copy.timestamp_ms / 1000))
        self._report_lag()

    async def _probe(
        self, consumer: AIOKafkaConsumer, tps: list[TopicPartition], stop: asyncio.Event
    ) -> None:
        """Read the source's end offsets now and then: lag metrics, and whether the source answers.
        A silent source (a partition drops packets, it does not refuse connections) shows only
        here: the consumer's fetches just time out and return nothing."""
        while not stop.is_set():
            try:
                ends = await consumer.end_offsets(tps)
            except KafkaError as exc:
                self._source_answered(False, exc)
            else:
                self._source_answered(True)
                self._log_end = {tp.partition: ends[tp] for tp in tps}
            self._report_lag()
            await _wait(stop, self._cfg.lag_interval_s)

    def _source_answered(self, answered: bool, error: Exception | None = None, quiet: bool = False) -> None:
        """Record whether the source answered; say so in the log when that changes."""
        metrics.SOURCE_REACHABLE.labels(self._pair.source).set(1 if answered else 0)
        if answered and not self._source_answers:
            log.info("source region %s answers again; copying from the checkpoints", self._pair.source)
        elif not answered and self._source_answers and not quiet:
            log.warning(
                "source region %s does not answer (%r); its lag grows until it does, nothing is lost "
                "while it keeps its awards", self._pair.source, error,
            )  # fmt: skip
        self._source_answers = answered

    def _report_lag(self) -> None:
        now_ms = int(time.time() * 1000)
        records = metrics.report_progress(
            self._pair.source, self.checkpoints, self._log_end, now_ms, self._source_answers
        )
        self._health.report_lag(f"{self._pair.source}:{self.source_topic}", records)


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    """Sleep up to ``seconds``, waking early when ``stop`` is set."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
