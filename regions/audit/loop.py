"""The audit sink: applied awards into Cassandra history, one row per event id.

At-least-once from Kafka plus ``INSERT ... IF NOT EXISTS`` gives exactly one row per applied award.
Offsets are committed only after every row of a batch is written, so a Cassandra outage only delays
the audit: it never blocks intake or projection, and the sink catches up when Cassandra returns. The
sink starts during an outage too, and reports its true backlog meanwhile.

A record that can never become a row (it cannot be decoded, or Cassandra refuses its values) is sent
to the reconciliation topic with the reason, its position and its bytes, then committed past: it
neither stops the audit nor disappears.

With several regions, every region applies every award, but a board's history is written by its
home region's sink alone (the award names the home region it was accepted for): one row per distinct
award, wherever it was accepted, and no region writes into another's data center.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import msgspec
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from cassandra import InvalidRequest

from regions.cassandra_audit import AuditRow, CassandraAudit
from regions.cassandra_store import CassandraConnection, CassandraUnavailable
from regions.core.rate_limit import TokenBuckets
from regions.health import Health
from regions.kafka_clients import assign_from_committed, make_consumer, make_producer, partitions_of
from regions.metrics import AUDIT_BACKLOG, AUDIT_LEFT_TO_HOME, AUDIT_RECONCILED, AUDIT_WRITTEN
from regions.settings import Settings
from regions.throttled_log import ThrottledLog
from schema.records import AppliedAward, Codec, Reconciliation

log = logging.getLogger(__name__)
CONCURRENCY = 128  # rows in flight to Cassandra at once
# Errors that a retry cannot cure: the driver cannot bind the row's values, or Cassandra refuses them.
REFUSED_FOR_GOOD = (TypeError, ValueError, InvalidRequest)


def audit_row(applied: AppliedAward) -> AuditRow:
    a = applied.award
    return AuditRow(
        event_id=a.event_id, board_id=a.board_id, user_id=a.user_id, match_id=a.match_id,
        award_type=a.award_type, amount=a.amount, occurred_at_ms=a.occurred_at_ms, region=a.region,
        source_partition=applied.source_partition, source_offset=applied.source_offset,
        total=applied.total, version=applied.version,
    )  # fmt: skip


def audited_here(applied: AppliedAward, region: str) -> bool:
    """Whether this region's sink records the award: its board's home region does (an award
    accepted before awards named their home region is recorded where it was applied)."""
    home = applied.award.home_region
    return not home or home == region


@dataclass(frozen=True, slots=True)
class Pending:
    """A row to write and the record it came from."""

    record: ConsumerRecord
    applied: AppliedAward
    row: AuditRow


class AuditSink:
    def __init__(
        self, settings: Settings, audit: CassandraConnection[CassandraAudit], health: Health
    ) -> None:
        self._settings = settings
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

    async def _record(self, rows: list[AuditRow]) -> list[bool | Exception]:
        try:
            audit = self._audit.adapter
        except CassandraUnavailable as exc:
            return [exc] * len(rows)
        results: list[bool | Exception] = []
        for start in range(0, len(rows), CONCURRENCY):
            results += await audit.record_many(rows[start : start + CONCURRENCY])
        return results

    async def _write(self, pending: list[Pending]) -> list[tuple[Pending, Exception]]:
        """Write every row, retrying failures with capped exponential backoff until each is written
        or refused for good; returns those refused, with why."""
        cfg = self._settings.audit
        delay = cfg.retry_initial_s
        refused: list[tuple[Pending, Exception]] = []
        while pending:
            results = await self._record([p.row for p in pending])
            failed = []
            for item, result in zip(pending, results, strict=True):
                if isinstance(result, REFUSED_FOR_GOOD):
                    refused.append((item, result))
                elif isinstance(result, Exception):
                    failed.append((item, result))
                elif result:
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

    async def _handle(self, producer: AIOKafkaProducer, records: list[ConsumerRecord]) -> None:
        """Audit a batch; what cannot be audited goes to reconciliation, acknowledged before return."""
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
            pending.append(Pending(record, applied, audit_row(applied)))
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

    async def run(self, stop: asyncio.Event) -> None:
        consumer = make_consumer(self._settings.kafka, group_id=self._group)
        producer = make_producer(self._settings.kafka)
        await consumer.start()
        await producer.start()
        try:
            tps = [
                TopicPartition(self._topic, p) for p in await partitions_of(self._settings.kafka, self._topic)
            ]
            await assign_from_committed(consumer, tps)
            done = {tp: await consumer.position(tp) for tp in tps}
            self._report = lambda: self._report_backlog(consumer, done)
            while not stop.is_set():
                polled = await consumer.getmany(*tps, timeout_ms=200, max_records=2000)
                records = [r for rs in polled.values() for r in rs]
                if records:
                    await self._handle(producer, records)
                # Every record before the position is handled; it also steps over transaction markers.
                positions = {tp: await consumer.position(tp) for tp in tps}
                moved = {tp: offset for tp, offset in positions.items() if offset != done[tp]}
                if moved:
                    await consumer.commit(moved)
                    done |= moved
                await self._report_backlog(consumer, done)
        finally:
            self._report = None
            await producer.stop()
            await consumer.stop()
