"""The audit sink: applied awards into Cassandra history, one row per event id.

At-least-once from Kafka plus idempotent rows (writing an applied award again leaves the same row,
see ``regions.stores.cassandra.audit``) gives exactly one row per applied award. Offsets are committed
past a batch only after every row of it is written, so a Cassandra outage only delays the audit:
it never blocks intake or projection, and the sink catches up when Cassandra returns. The sink
starts during an outage too, and reports its true backlog meanwhile.

Before it writes a batch, the sink commits how far the batch reaches (``regions.core.audit_progress``).
A sink that starts after one stopped in the middle of a batch checks the rows of those records
first and counts the ones it finds as present, not written: ``lb_audit_rows_written_total`` counts
every row once, however often its record is delivered.

A record that can never become a row (it cannot be decoded, or Cassandra refuses its values) is sent
to the reconciliation topic with the reason, its position and its bytes, then committed past: it
neither stops the audit nor disappears.

With several regions, every region applies every award, but a board's history is written by its
home region's sink alone (the award names the home region it was accepted for): one row per distinct
award, wherever it was accepted, and no region writes into another's data center. An erased
player's awards (the erasure list, ``regions.runtime.erasure_list``) are not written: an erasure
removes the player's rows only after every sink has read the list, so none comes back; a sink that
starts writes nothing until it has read the list whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

import msgspec
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.errors import OffsetOutOfRangeError
from cassandra import InvalidRequest

from regions.core.audit_progress import intent_metadata, unsure_before
from regions.core.rate_limit import TokenBuckets
from regions.core.resume import Gap, Resume, Rewound, resume
from regions.runtime.cadence import Cadence
from regions.runtime.erasure_list import ErasureList
from regions.runtime.health import Health
from regions.runtime.logs import ThrottledLog
from regions.runtime.metrics import (
    AUDIT_BACKLOG,
    AUDIT_DELETED,
    AUDIT_LEFT_TO_HOME,
    AUDIT_PRESENT,
    AUDIT_RECONCILED,
    AUDIT_WRITTEN,
)
from regions.runtime.settings import Settings
from regions.stores.cassandra.audit import AuditRow, CassandraAudit
from regions.stores.cassandra.session import CassandraConnection, CassandraUnavailable
from regions.stores.kafka.clients import (
    FetchPace,
    assign_from_committed,
    committed_metadata,
    make_consumer,
    make_producer,
    partitions_of,
    stop_consumer,
)
from schema.records import AppliedAward, Codec, Reconciliation

log = logging.getLogger(__name__)
CONCURRENCY = 128  # rows in flight to Cassandra at once
BACKLOG_REPORT_S = 1.0  # the backlog (one ListOffsets request) is read at most this often
# Errors that a retry cannot cure: the driver cannot bind the row's values, or Cassandra refuses them.
REFUSED_FOR_GOOD = (TypeError, ValueError, InvalidRequest)


def audit_row(applied: AppliedAward, applied_at_ms: int) -> AuditRow:
    """The row of an applied award; ``applied_at_ms`` is its applied-award record's timestamp."""
    a = applied.award
    return AuditRow(
        event_id=a.event_id, board_id=a.board_id, user_id=a.user_id, match_id=a.match_id,
        award_type=a.award_type, amount=a.amount, occurred_at_ms=a.occurred_at_ms, region=a.region,
        source_partition=applied.source_partition, source_offset=applied.source_offset,
        total=applied.total, version=applied.version, applied_at_ms=applied_at_ms,
    )  # fmt: skip


def audited_here(applied: AppliedAward, region: str) -> bool:
    """Whether this region's sink records the award: its board's home region does (an award
    accepted before awards named their home region is recorded where it was applied)."""
    home = applied.award.home_region
    return not home or home == region


@dataclass(frozen=True, slots=True)
class Pending:
    """A row to write and the record it came from; ``unsure``: an earlier sink may have written it."""

    record: ConsumerRecord
    applied: AppliedAward
    row: AuditRow
    unsure: bool = False


WRITTEN, PRESENT = "written", "present"
Outcome = str | Exception  # WRITTEN, PRESENT, or why the row is not written (yet)


class AuditSink:
    def __init__(
        self, settings: Settings, audit: CassandraConnection[CassandraAudit], health: Health,
        erased: ErasureList | None = None,
    ) -> None:  # fmt: skip
        self._settings = settings
        self._erased = erased
        self._audit = audit
        self._health = health
        self._group = f"{settings.kafka.topic_prefix}.audit.{settings.region}"
        self._topic = settings.kafka.topic("applied")
        self._codec = Codec()
        cap = settings.audit.max_rows_per_s
        self._pace = TokenBuckets(rate=cap or 1.0, burst=max(1.0, cap / 10))
        self._errors = ThrottledLog(log)
        self._report: Callable[[], Awaitable[None]] | None = None
        self.cassandra_ok = True

    async def _record(self, pending: list[Pending]) -> list[tuple[Outcome, bool]]:
        """One attempt at every row: the unsure ones are looked for first, the others written. Per
        row its outcome, and whether it is still unsure (it was not looked for successfully)."""
        try:
            audit = self._audit.adapter
        except CassandraUnavailable as exc:
            return [(exc, p.unsure) for p in pending]
        outcomes: list[tuple[Outcome, bool]] = [(WRITTEN, False)] * len(pending)
        unsure = [i for i, p in enumerate(pending) if p.unsure]
        for start in range(0, len(unsure), CONCURRENCY):
            chunk = unsure[start : start + CONCURRENCY]
            found = await audit.present_many([pending[i].row.event_id for i in chunk])
            for i, present in zip(chunk, found, strict=True):
                if isinstance(present, Exception):
                    outcomes[i] = (present, True)
                elif present:
                    outcomes[i] = (PRESENT, False)
        to_write = [i for i, (outcome, _) in enumerate(outcomes) if outcome == WRITTEN]
        for start in range(0, len(to_write), CONCURRENCY):
            chunk = to_write[start : start + CONCURRENCY]
            errors = await audit.write_many([pending[i].row for i in chunk])
            for i, error in zip(chunk, errors, strict=True):
                if error is not None:
                    outcomes[i] = (error, False)  # looked for and not there: this sink's to write
        return outcomes

    async def _write(self, pending: list[Pending]) -> list[tuple[Pending, Exception]]:
        """Write every row, retrying failures with capped exponential backoff until each is written,
        found present or refused for good; returns those refused, with why."""
        cfg = self._settings.audit
        delay = cfg.retry_initial_s
        refused: list[tuple[Pending, Exception]] = []
        while pending:
            failed = []
            for item, (outcome, unsure) in zip(pending, await self._record(pending), strict=True):
                if isinstance(outcome, REFUSED_FOR_GOOD):
                    refused.append((item, outcome))
                elif isinstance(outcome, Exception):
                    failed.append((replace(item, unsure=unsure), outcome))
                elif outcome == PRESENT:
                    AUDIT_PRESENT.inc()
                else:
                    AUDIT_WRITTEN.inc()
            self.cassandra_ok = not failed
            if failed:
                self._errors.log(logging.WARNING, "write", "audit: %d rows not written (%r); retrying",
                                 len(failed), failed[0][1])  # fmt: skip
                if self._report is not None:
                    await self._report()
                await asyncio.sleep(delay)
                delay = min(delay * 2, cfg.retry_max_s)
            pending = [item for item, _ in failed]
        return refused

    async def _paced(self, pending: list[Pending]) -> list[tuple[Pending, Exception]]:
        """Write rows, at most ``max_rows_per_s`` a second when a cap is set: audit is eventual, so
        under a peak it queues in Kafka instead of taking CPU from acceptance and ranking."""
        cap = self._settings.audit.max_rows_per_s
        if not cap:
            return await self._write(pending)
        chunk = max(1, int(cap / 10))
        refused = []
        for start in range(0, len(pending), chunk):
            part = pending[start : start + chunk]
            await asyncio.sleep(self._pace.reserve("audit", len(part), time.monotonic()))
            refused += await self._write(part)
        return refused

    async def _erasures_read(self) -> None:
        """Wait until the erasure list is read whole (after a start): before, an erased player's
        awards would be written again."""
        while self._erased is not None and not self._erased.ready:
            if self._report is not None:
                await self._report()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._erased.loaded.wait(), 1.0)

    def _reconciliation(
        self, record: ConsumerRecord, reason: str, detail: str, applied: AppliedAward | None
    ) -> bytes:
        AUDIT_RECONCILED.labels(reason).inc()
        log.error("audit: %s:%d:%d sent to reconciliation (%s: %s)", record.topic, record.partition,
                  record.offset, reason, detail)  # fmt: skip
        return self._codec.encode(
            Reconciliation(
                reason=reason, detail=detail, award=None if applied is None else applied.award,
                source_partition=record.partition, source_offset=record.offset, source_topic=record.topic,
                raw=record.value,
            )
        )  # fmt: skip

    async def _handle(
        self, producer: AIOKafkaProducer, records: list[ConsumerRecord], unsure: dict[TopicPartition, int]
    ) -> None:
        """Audit a batch; what cannot be audited goes to reconciliation, acknowledged before return.
        Rows of records before ``unsure`` (per partition) may be written already: they are looked for."""
        await self._erasures_read()
        pending, unaudited = [], []
        for record in records:
            try:
                applied = self._codec.applied(record.value)
            except msgspec.DecodeError as exc:
                unaudited.append((record, self._reconciliation(record, "undecodable", str(exc), None)))
                continue
            if not audited_here(applied, self._settings.region):
                AUDIT_LEFT_TO_HOME.inc()
                continue
            if self._erased is not None and self._erased.has(applied.award.user_id):
                continue  # an erased player's: their history is not written again
            tp = TopicPartition(record.topic, record.partition)
            pending.append(
                Pending(
                    record, applied, audit_row(applied, record.timestamp), record.offset < unsure.get(tp, 0)
                )
            )
        for item, error in await self._paced(pending):
            detail = f"Cassandra refused the row: {error}"
            unaudited.append(
                (item.record, self._reconciliation(item.record, "audit_refused", detail, item.applied))
            )
        topic = self._settings.kafka.topic("reconciliation")
        sent = [await producer.send(topic, value, key=record.key) for record, value in unaudited]
        await asyncio.gather(*sent)

    async def _report_backlog(self, consumer: AIOKafkaConsumer, done: dict[TopicPartition, int]) -> None:
        """Records not yet audited, from Kafka's end offsets and the sink's own progress."""
        end = await consumer.end_offsets(list(done))
        lag = {tp.partition: max(0, end[tp] - done[tp]) for tp in done}
        self._health.report_lag(self._topic, lag)
        AUDIT_BACKLOG.set(sum(lag.values()))

    async def _past_deleted(self, consumer: AIOKafkaConsumer, error: OffsetOutOfRangeError) -> None:
        """Continue from the oldest record left where a position's records are gone
        (``regions.core.resume``). Records retention deleted before their rows were written are
        history rows missing for good: counted and logged, never skipped in silence. A position past
        the end (a topic made again) reads from the start: rows are idempotent."""
        positions: dict[TopicPartition, int] = error.args[0]
        first = await consumer.beginning_offsets(list(positions))
        last = await consumer.end_offsets(list(positions))
        for tp, position in positions.items():
            outcome = resume(position, first[tp], last[tp])
            if isinstance(outcome, Gap):
                AUDIT_DELETED.inc(outcome.missing)
                log.error("audit: %s partition %d lost offsets %d..%d to retention before their rows were "
                          "written (%d history rows missing); continuing from %d", tp.topic, tp.partition,
                          position, first[tp] - 1, outcome.missing, first[tp])  # fmt: skip
            elif isinstance(outcome, Rewound):
                log.error("audit: %s partition %d has no offset %d (the topic was made again?); reading it "
                          "again from %d", tp.topic, tp.partition, position, first[tp])  # fmt: skip
            consumer.seek(tp, first[tp] if not isinstance(outcome, Resume) else position)

    async def run(self, stop: asyncio.Event) -> None:
        interval_ms = self._settings.audit.round_interval_ms
        consumer = make_consumer(
            self._settings.kafka, group_id=self._group, fetch_wait_ms=int(interval_ms), skip_deleted=False
        )
        producer = make_producer(self._settings.kafka)
        await consumer.start()
        await producer.start()
        try:
            tps = [
                TopicPartition(self._topic, p) for p in await partitions_of(self._settings.kafka, self._topic)
            ]
            await assign_from_committed(consumer, tps)
            done = {tp: await consumer.position(tp) for tp in tps}
            committed = dict(done)
            intents = await committed_metadata(self._settings.kafka, self._group, tps)
            unsure = {tp: unsure_before(done[tp], intents.get(tp, "")) for tp in tps}
            self._report = lambda: self._report_backlog(consumer, done)
            cadence, reported = Cadence(interval_ms / 1000), 0.0
            pace = FetchPace(consumer, self._settings.kafka)
            while not stop.is_set():
                cadence.begin()
                try:
                    polled = await consumer.getmany(*tps, timeout_ms=200, max_records=2000)
                except OffsetOutOfRangeError as exc:
                    await self._past_deleted(consumer, exc)
                    polled = {}
                pace.after(polled)
                records = [r for rs in polled.values() for r in rs]
                # Every record before the position is handled once this batch is; it also steps over
                # transaction markers.
                positions = {tp: await consumer.position(tp) for tp in tps}
                if records:
                    # What is done, and how far this batch may write: one commit per batch.
                    await consumer.commit({tp: (done[tp], intent_metadata(positions[tp])) for tp in tps})
                    committed = dict(done)
                    await self._handle(producer, records, unsure)
                done |= positions
                if not records and done != committed:
                    await consumer.commit(dict(done))
                    committed = dict(done)
                if time.monotonic() >= reported + BACKLOG_REPORT_S:
                    reported = time.monotonic()
                    await self._report_backlog(consumer, done)
                await cadence.end(bool(records))
            if done != committed:
                await consumer.commit(dict(done))
        finally:
            self._report = None
            await producer.stop()
            await stop_consumer(consumer)
