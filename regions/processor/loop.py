"""The stateful processor: awards in, versioned absolute totals out, exactly once.

Instances of a region form one Kafka consumer group; the group spreads the awards partitions over
them and moves partitions when an instance joins, leaves or goes silent. Each source partition has
its own transactional id, so whoever takes a partition over fences every earlier owner (a crashed
instance, or a paused one the group already gave up on) and aborts its open transaction before it
restores the partition's state, dedupe memory included, from the compacted changelog.

Per partition and round, one Kafka transaction holds the totals (which are also the changelog of
the state), the applied-award audit feed, reconciliation records, a watermark and the consumer
offset. State changes live in an overlay until the commit succeeds; on any failure the process
restores its state from the changelog.

A record that cannot be processed (it does not decode, or names a rule this processor does not know)
goes to reconciliation with the reason and its bytes, and the partition goes on: one bad record
must not stop a partition on every restart.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import msgspec
from aiokafka import (
    AIOKafkaConsumer,
    AIOKafkaProducer,
    ConsumerRebalanceListener,
    ConsumerRecord,
    TopicPartition,
)

from regions.core.aggregation import (
    Applied,
    Conflict,
    DedupePolicy,
    Duplicate,
    Outcome,
    PlayerState,
    apply_award,
)
from regions.core.boards import Aggregation, SortOrder, TiePolicy
from regions.core.ordering import reached_position
from regions.health import Health
from regions.kafka_clients import (
    make_consumer,
    make_producer,
    partitions_of,
    replay,
)
from regions.metrics import (
    PROCESSOR_APPLIED,
    PROCESSOR_RECONCILED,
    PROCESSOR_REPEATS,
    PROCESSOR_TRANSACTION_SECONDS,
)
from regions.settings import Settings
from regions.throttled_log import ThrottledLog
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


@dataclass(slots=True, eq=False)
class OwnedPartition:
    """A source partition this instance owns: the producer that fences its earlier owners, its state,
    and the offset it continues from."""

    tp: TopicPartition
    producer: AIOKafkaProducer
    state: dict[StateKey, PlayerState] = field(default_factory=dict)
    next_offset: int = 0
    committed_at: float = 0.0


class Processor:
    def __init__(self, settings: Settings, health: Health) -> None:
        self._settings = settings
        self._kafka = settings.kafka
        self._health = health
        cfg = settings.processor
        self._policy = DedupePolicy(cfg.dedupe_horizon_s * 1000, cfg.dedupe_max_recent)
        self._group = f"{self._kafka.topic_prefix}.processor.{settings.region}"
        self._codec = Codec()
        self.owned: dict[int, OwnedPartition] = {}
        self._unreadable = ThrottledLog(log)
        self.restored = asyncio.Event()
        # Held while a round's transactions run and while ownership changes, so a partition is never
        # handed over in the middle of a transaction.
        self._lock = asyncio.Lock()
        self._rebalancing = True
        self._failure: BaseException | None = None

    def transactional_id(self, partition: int) -> str:
        return f"{self._group}.p{partition}"

    async def _check_partitions(self) -> None:
        awards, totals = self._kafka.topic("awards"), self._kafka.topic("totals")
        source = set(await partitions_of(self._kafka, awards))
        changelog = set(await partitions_of(self._kafka, totals))
        if source != changelog:
            raise PartitionsMismatch(
                f"{awards} has {len(source)} partitions and {totals} has {len(changelog)}; they must be equal. "
                "Fix the topics before starting the processor."
            )

    async def restore(self, partition: int) -> dict[StateKey, PlayerState]:
        """The state of one partition, dedupe memory included, rebuilt from its changelog partition."""
        state: dict[StateKey, PlayerState] = {}
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
                        state[(t.board_id, t.user_id)] = PlayerState(t.total, t.version, t.reached, t.recent)

        next_report = 100_000

        def progress(done: int, total: int) -> None:
            nonlocal next_report
            if done >= next_report:
                log.info("restoring partition %d: %d of %d changelog offsets", partition, done, total)
                next_report += 100_000

        await replay(
            self._kafka, [TopicPartition(self._kafka.topic("totals"), partition)], load, progress=progress
        )
        log.info("partition %d restored: %d players from %d changelog records", partition, len(state), read)
        return state

    async def _acquire(self, consumer: AIOKafkaConsumer, tp: TopicPartition) -> OwnedPartition:
        """Take a partition over: fence its earlier owners first, then restore, then find the offset."""
        producer = make_producer(self._kafka, transactional_id=self.transactional_id(tp.partition))
        # init_transactions bumps the epoch of this transactional id: an earlier owner can no longer
        # commit, and its open transaction is aborted before the changelog is read.
        await producer.start()
        try:
            state = await self.restore(tp.partition)
            committed = await consumer.committed(tp)
            start = committed if committed is not None else (await consumer.beginning_offsets([tp]))[tp]
        except BaseException:
            await producer.stop()
            raise
        return OwnedPartition(tp, producer, state, start)

    async def take(self, consumer: AIOKafkaConsumer, assigned: Iterable[TopicPartition]) -> None:
        """Own exactly ``assigned``: release the others, acquire the new ones, and continue each one
        from where its state stands. The consumer only logs a listener's exception, so a failure is
        handed to the processing loop, which raises it."""
        try:
            await self._take(consumer, assigned)
        except Exception as exc:
            self._failure = exc

    async def _take(self, consumer: AIOKafkaConsumer, assigned: Iterable[TopicPartition]) -> None:
        async with self._lock:
            wanted = {tp.partition: tp for tp in assigned}
            for partition in [p for p in self.owned if p not in wanted]:
                await self.owned.pop(partition).producer.stop()
            new = [tp for p, tp in sorted(wanted.items()) if p not in self.owned]
            acquired = await asyncio.gather(
                *(self._acquire(consumer, tp) for tp in new), return_exceptions=True
            )
            for result in acquired:
                if isinstance(result, OwnedPartition):
                    self.owned[result.tp.partition] = result
            failed = [r for r in acquired if isinstance(r, BaseException)]
            if failed:
                raise failed[0]
            for partition, tp in wanted.items():
                # A partition kept across the rebalance keeps its state: if anyone owned it meanwhile,
                # they fenced this producer and the next commit fails, which restores from Kafka.
                consumer.seek(tp, self.owned[partition].next_offset)
            self._rebalancing = False
            self.restored.set()
            log.info("owning partitions %s", sorted(self.owned))

    async def pause(self) -> None:
        """Stop processing until the next assignment, once the round in flight has committed: a new
        owner fences this instance's producers only after every member has paused. Partitions are
        released when the assignment is known, so those that stay here keep their state."""
        async with self._lock:
            self._rebalancing = True
            self.restored.clear()

    def _total(self, award: AwardEvent, state: PlayerState, partition: int, offset: int) -> PlayerTotal:
        return PlayerTotal(
            board_id=award.board_id, user_id=award.user_id, total=state.total, version=state.version,
            reached=state.reached, recent=state.recent, sort_order=award.sort_order,
            tie_policy=award.tie_policy, source_partition=partition, source_offset=offset,
            event_id=award.event_id,
        )  # fmt: skip

    def _reconcile(
        self, reason: str, detail: str, award: AwardEvent | None, record: ConsumerRecord
    ) -> tuple[str, bytes, bytes]:
        """The reconciliation record of an award record that is not applied; the raw bytes are kept
        when the award itself could not be read."""
        PROCESSOR_RECONCILED.labels(reason).inc()
        if award is None:
            self._unreadable.log(logging.ERROR, reason, "award record %s:%d:%d sent to reconciliation (%s: %s)",
                                 record.topic, record.partition, record.offset, reason, detail)  # fmt: skip
        value = self._codec.encode(
            Reconciliation(
                reason=reason, detail=detail, award=award, source_partition=record.partition,
                source_offset=record.offset, source_topic=record.topic,
                raw=record.value if award is None else None,
            )
        )  # fmt: skip
        return self._kafka.topic("reconciliation"), record.key or b"", value

    def _judge(
        self, record: ConsumerRecord, state: dict[StateKey, PlayerState], overlay: dict[StateKey, PlayerState]
    ) -> tuple[AwardEvent, Outcome]:
        """Decode an award and apply it to its player's state (pure: nothing is changed here)."""
        award = self._codec.award(record.value)
        # Rules this processor does not know (e.g. an aggregation from a newer release) raise ValueError.
        Aggregation(award.aggregation), SortOrder(award.sort_order), TiePolicy(award.tie_policy)
        key = (award.board_id, award.user_id)
        reached = reached_position(award.accepted_at_ms, record.partition, record.offset)
        return award, apply_award(overlay.get(key) or state.get(key), award, reached, self._policy)

    def _process_record(
        self,
        record: ConsumerRecord,
        state: dict[StateKey, PlayerState],
        overlay: dict[StateKey, PlayerState],
        out: list[tuple[str, bytes, bytes]],
    ) -> None:
        """Apply one award record; appends (topic, key, value) for everything it produces."""
        try:
            award, outcome = self._judge(record, state, overlay)
        except msgspec.DecodeError as exc:
            out.append(self._reconcile("undecodable", str(exc), None, record))
            return
        # Whatever one record makes the pure part raise, it must not stop the partition.
        except Exception as exc:
            out.append(self._reconcile("unprocessable", f"{type(exc).__name__}: {exc}", None, record))
            return
        key = (award.board_id, award.user_id)
        if isinstance(outcome, Applied):
            overlay[key] = outcome.state
            total = self._total(award, outcome.state, record.partition, record.offset)
            out.append((self._kafka.topic("totals"), totals_key(*key), self._codec.encode(total)))
            applied = AppliedAward(award=award, total=total.total, version=total.version,
                                   source_partition=record.partition, source_offset=record.offset)  # fmt: skip
            out.append((self._kafka.topic("applied"), totals_key(*key), self._codec.encode(applied)))
            PROCESSOR_APPLIED.inc()
        elif isinstance(outcome, Duplicate):
            PROCESSOR_REPEATS.inc()
        elif isinstance(outcome, Conflict):
            detail = f"event {outcome.event_id} was applied with digest {outcome.recorded_digest}"
            out.append(self._reconcile("conflicting_repeat", detail, award, record))
        else:
            detail = f"total would be {outcome.total}, outside +-2^53"
            out.append(self._reconcile("total_out_of_range", detail, award, record))

    async def process_partition(self, owned: OwnedPartition, records: list[ConsumerRecord]) -> None:
        """One transaction: outputs, the watermark and the offset; the overlay is kept only after commit."""
        overlay: dict[StateKey, PlayerState] = {}
        out: list[tuple[str, bytes, bytes]] = []
        for record in records:
            self._process_record(record, owned.state, overlay, out)
        last = records[-1]
        mark = Watermark(source_partition=owned.tp.partition, source_offset=last.offset,
                         accepted_at_ms=last.timestamp)  # fmt: skip
        out.append((self._kafka.topic("totals"), WATERMARK_KEY, self._codec.encode(mark)))
        # The coordinator writes commit markers after it answers; a transaction begun before they are
        # written is refused (CONCURRENT_TRANSACTIONS) and the client backs off 20 ms.
        loop = asyncio.get_running_loop()
        gap = self._settings.processor.commit_gap_ms / 1000
        await asyncio.sleep(max(0.0, owned.committed_at + gap - loop.time()))
        producer = owned.producer
        began = time.perf_counter()
        async with producer.transaction():
            # Totals and applied records stay on the source partition: the changelog is co-partitioned.
            futures = [
                await producer.send(topic, value, key=key, partition=owned.tp.partition)
                for topic, key, value in out
            ]
            await asyncio.gather(*futures)
            await producer.send_offsets_to_transaction({owned.tp: last.offset + 1}, self._group)
        PROCESSOR_TRANSACTION_SECONDS.observe(time.perf_counter() - began)
        owned.committed_at = loop.time()
        owned.next_offset = last.offset + 1
        owned.state.update(overlay)

    async def _report_lag(self, consumer: AIOKafkaConsumer) -> None:
        """Records not yet committed, per owned partition (also what this instance owns)."""
        owned = list(self.owned.values())
        end = await consumer.end_offsets([o.tp for o in owned]) if owned else {}
        lag = {o.tp.partition: max(0, end[o.tp] - o.next_offset) for o in owned}
        self._health.report_lag(self._kafka.topic("awards"), lag)

    async def run(self, stop: asyncio.Event) -> None:
        """Join the group and process until ``stop`` is set. Raises on Kafka errors (the caller reruns,
        which restores every partition from the changelog)."""
        self.restored.clear()
        self._failure = None
        await self._check_partitions()
        cfg = self._settings.processor
        consumer = make_consumer(self._kafka, group_id=self._group, session_timeout_ms=cfg.session_timeout_ms)
        consumer.subscribe([self._kafka.topic("awards")], listener=_Ownership(self, consumer))
        await consumer.start()
        try:
            loop = asyncio.get_running_loop()
            next_lag = 0.0
            while not stop.is_set():
                if self._failure is not None:
                    raise self._failure
                batch = await consumer.getmany(timeout_ms=100, max_records=cfg.max_batch)
                # Which partitions the records were fetched for: ownership may change before the lock.
                fetched_for = {tp: self.owned.get(tp.partition) for tp in batch}
                async with self._lock:
                    work = []
                    for tp, records in batch.items() if not self._rebalancing else ():
                        owned = fetched_for[tp]
                        if owned is None or self.owned.get(tp.partition) is not owned:
                            continue
                        fresh = [r for r in records if r.offset >= owned.next_offset]
                        if fresh:
                            work.append(self.process_partition(owned, fresh))
                    # Every partition's transaction settles before a failure is raised.
                    failures = [r for r in await asyncio.gather(*work, return_exceptions=True) if r]
                    if failures:
                        raise failures[0]
                if loop.time() >= next_lag:
                    await self._report_lag(consumer)
                    next_lag = loop.time() + 2
        finally:
            self.restored.clear()
            await consumer.stop()
            async with self._lock:
                for owned in self.owned.values():
                    await owned.producer.stop()
                self.owned.clear()


class _Ownership(ConsumerRebalanceListener):  # type: ignore[misc]
    """Keeps the processor's owned partitions equal to the group's assignment."""

    def __init__(self, processor: Processor, consumer: AIOKafkaConsumer) -> None:
        self._processor = processor
        self._consumer = consumer

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        await self._processor.pause()

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        await self._processor.take(self._consumer, assigned)
