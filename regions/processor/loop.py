"""The stateful processor: awards in, versioned absolute totals out, exactly once.

Each instance owns the awards partitions ``p`` with ``p % instances == instance`` and a
transactional id of its own, so a restarted instance fences its previous incarnation. Per batch,
one Kafka transaction holds the totals (which are also the compacted changelog of the state), the
applied-award audit feed, reconciliation records, a watermark per partition and the consumer
offsets. State changes of a batch live in an overlay until the commit succeeds; on any failure the
process restores its whole state (dedupe memory included) from the changelog.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import msgspec
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition

from regions.core.aggregation import (
    Applied,
    Conflict,
    DedupePolicy,
    Duplicate,
    PlayerState,
    apply_award,
)
from regions.core.ordering import reached_position
from regions.health import Health
from regions.kafka_clients import (
    assign_from_committed,
    consumer_lag,
    make_consumer,
    make_producer,
    partitions_of,
    replay,
)
from regions.settings import Settings
from schema.records import (
    WATERMARK_KEY,
    AppliedAward,
    AwardEvent,
    Codec,
    PlayerTotal,
    Reconciliation,
    Watermark,
    decoded,
    totals_key,
)

log = logging.getLogger(__name__)
StateKey = tuple[str, str]


class PartitionsMismatch(RuntimeError):
    """The changelog must have exactly the source's partitions, or state would land elsewhere."""


@dataclass(slots=True)
class BatchCounts:
    applied: int = 0
    duplicates: int = 0
    reconciled: int = 0


class Processor:
    def __init__(self, settings: Settings, health: Health) -> None:
        self._settings = settings
        self._kafka = settings.kafka
        self._health = health
        cfg = settings.processor
        self._policy = DedupePolicy(cfg.dedupe_horizon_s * 1000, cfg.dedupe_max_recent)
        self._group = f"{self._kafka.topic_prefix}.processor.{settings.region}"
        self._txn_id = f"{self._group}.{cfg.instance}"
        self._codec = Codec()
        self.state: dict[StateKey, PlayerState] = {}
        self.counts = BatchCounts()
        self.restored = asyncio.Event()

    async def _owned_partitions(self, consumer: AIOKafkaConsumer) -> list[int]:
        awards, totals = self._kafka.topic("awards"), self._kafka.topic("totals")
        source = set(await partitions_of(self._kafka, awards))
        changelog = set(await partitions_of(self._kafka, totals))
        if not source or source != changelog:
            raise PartitionsMismatch(
                f"{awards} has {len(source)} partitions and {totals} has {len(changelog)}; they must be equal "
                "and non-zero. Run 'ops/lb bootstrap' or fix the topics before starting the processor."
            )
        cfg = self._settings.processor
        return sorted(p for p in source if p % cfg.instances == cfg.instance)

    async def restore(self, partitions: list[int]) -> int:
        """Rebuild the in-memory state, dedupe memory included, from the changelog partitions."""
        self.state.clear()
        read = 0

        async def load(records: list[ConsumerRecord]) -> None:
            nonlocal read
            read += len(records)
            for record in records:
                if record.key != WATERMARK_KEY:
                    t = decoded(
                        self._codec.totals, record.value, f"{record.topic}:{record.partition}:{record.offset}"
                    )
                    if isinstance(t, PlayerTotal):
                        self.state[(t.board_id, t.user_id)] = PlayerState(
                            t.total, t.version, t.reached, t.recent
                        )

        next_report = 100_000

        def progress(done: int, total: int) -> None:
            nonlocal next_report
            if done >= next_report:
                log.info("restoring state: %d of %d changelog offsets", done, total)
                next_report += 100_000

        tps = [TopicPartition(self._kafka.topic("totals"), p) for p in partitions]
        await replay(self._kafka, tps, load, progress=progress)
        log.info("state restored: %d players from %d changelog records", len(self.state), read)
        return read

    def _total(self, award: AwardEvent, state: PlayerState, partition: int, offset: int) -> PlayerTotal:
        return PlayerTotal(
            board_id=award.board_id, user_id=award.user_id, total=state.total, version=state.version,
            reached=state.reached, recent=state.recent, sort_order=award.sort_order,
            tie_policy=award.tie_policy, source_partition=partition, source_offset=offset,
            event_id=award.event_id,
        )  # fmt: skip

    def _reconcile(self, reason: str, detail: str, award: AwardEvent | None, record: ConsumerRecord) -> bytes:
        return self._codec.encode(
            Reconciliation(reason=reason, detail=detail, award=award, source_partition=record.partition,
                           source_offset=record.offset)
        )  # fmt: skip

    def _process_record(
        self,
        record: ConsumerRecord,
        overlay: dict[StateKey, PlayerState],
        out: list[tuple[str, bytes, bytes]],
    ) -> None:
        """Apply one award record; appends (topic, key, value) for everything it produces."""
        topics = self._kafka
        try:
            award = self._codec.award(record.value)
        except msgspec.DecodeError as exc:
            out.append(
                (
                    topics.topic("reconciliation"),
                    record.key or b"",
                    self._reconcile("undecodable", str(exc), None, record),
                )
            )
            self.counts.reconciled += 1
            return
        key = (award.board_id, award.user_id)
        state = overlay.get(key) or self.state.get(key)
        reached = reached_position(award.accepted_at_ms, record.partition, record.offset)
        outcome = apply_award(state, award, reached, self._policy)
        if isinstance(outcome, Applied):
            overlay[key] = outcome.state
            total = self._total(award, outcome.state, record.partition, record.offset)
            out.append((topics.topic("totals"), totals_key(*key), self._codec.encode(total)))
            applied = AppliedAward(award=award, total=total.total, version=total.version,
                                   source_partition=record.partition, source_offset=record.offset)  # fmt: skip
            out.append((topics.topic("applied"), totals_key(*key), self._codec.encode(applied)))
            self.counts.applied += 1
        elif isinstance(outcome, Duplicate):
            self.counts.duplicates += 1
        else:
            reason, detail = (
                (
                    "conflicting_repeat",
                    f"event {outcome.event_id} was applied with digest {outcome.recorded_digest}",
                )
                if isinstance(outcome, Conflict)
                else ("total_out_of_range", f"total would be {outcome.total}, outside +-2^53")
            )
            out.append(
                (
                    topics.topic("reconciliation"),
                    totals_key(*key),
                    self._reconcile(reason, detail, award, record),
                )
            )
            self.counts.reconciled += 1

    async def process_batch(
        self, producer: AIOKafkaProducer, batch: dict[TopicPartition, list[ConsumerRecord]]
    ) -> None:
        """One transaction: outputs, watermarks and offsets; the overlay is kept only after commit."""
        overlay: dict[StateKey, PlayerState] = {}
        offsets: dict[TopicPartition, int] = {}
        async with producer.transaction():
            futures = []
            for tp, records in batch.items():
                if not records:
                    continue
                out: list[tuple[str, bytes, bytes]] = []
                for record in records:
                    self._process_record(record, overlay, out)
                last = records[-1]
                mark = Watermark(source_partition=tp.partition, source_offset=last.offset,
                                 accepted_at_ms=last.timestamp)  # fmt: skip
                out.append((self._kafka.topic("totals"), WATERMARK_KEY, self._codec.encode(mark)))
                for topic, key, value in out:
                    # Totals and applied records stay on the source partition: the changelog is co-partitioned.
                    futures.append(await producer.send(topic, value, key=key, partition=tp.partition))
                offsets[tp] = last.offset + 1
            await asyncio.gather(*futures)
            await producer.send_offsets_to_transaction(offsets, self._group)
        self.state.update(overlay)

    async def run(self, stop: asyncio.Event) -> None:
        """Restore, then process until ``stop`` is set. Raises on Kafka errors (the caller restarts)."""
        self.restored.clear()
        producer = make_producer(self._kafka, transactional_id=self._txn_id)
        consumer = make_consumer(self._kafka, group_id=self._group)
        await producer.start()  # init_transactions: fences an older incarnation, aborts its open transaction
        await consumer.start()
        try:
            partitions = await self._owned_partitions(consumer)
            await self.restore(partitions)
            tps = [TopicPartition(self._kafka.topic("awards"), p) for p in partitions]
            await assign_from_committed(consumer, tps)
            self.restored.set()
            loop = asyncio.get_running_loop()
            next_lag = committed_at = 0.0
            gap = self._settings.processor.commit_gap_ms / 1000
            while not stop.is_set():
                batch = await consumer.getmany(
                    *tps, timeout_ms=100, max_records=self._settings.processor.max_batch
                )
                if any(batch.values()):
                    # The coordinator writes commit markers after it answers; a transaction begun before
                    # they are written is refused (CONCURRENT_TRANSACTIONS) and the client backs off 20 ms.
                    await asyncio.sleep(max(0.0, committed_at + gap - loop.time()))
                    await self.process_batch(producer, batch)
                    committed_at = loop.time()
                if loop.time() >= next_lag:
                    self._health.report_lag(tps[0].topic, await consumer_lag(consumer, tps))
                    next_lag = loop.time() + 2
        finally:
            self.restored.clear()
            await consumer.stop()
            await producer.stop()
