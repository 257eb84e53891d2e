"""The audit sink: applied awards into Cassandra history, one row per event id.

At-least-once from Kafka plus ``INSERT ... IF NOT EXISTS`` gives exactly one row per applied award.
Offsets are committed only after every row of a batch is written, so a Cassandra outage only delays
the audit: it never blocks intake or projection, and the sink catches up when Cassandra returns.
"""

from __future__ import annotations

import asyncio
import logging
import time

from aiokafka import TopicPartition

from regions.cassandra_audit import AuditRow, CassandraAudit
from regions.core.rate_limit import TokenBuckets
from regions.health import Health
from regions.kafka_clients import assign_from_committed, consumer_lag, make_consumer, partitions_of
from regions.settings import Settings
from schema.records import AppliedAward, Codec, decoded

log = logging.getLogger(__name__)
CONCURRENCY = 128  # rows in flight to Cassandra at once


def audit_row(applied: AppliedAward) -> AuditRow:
    a = applied.award
    return AuditRow(
        event_id=a.event_id, board_id=a.board_id, user_id=a.user_id, match_id=a.match_id,
        award_type=a.award_type, amount=a.amount, occurred_at_ms=a.occurred_at_ms, region=a.region,
        source_partition=applied.source_partition, source_offset=applied.source_offset,
        total=applied.total, version=applied.version,
    )  # fmt: skip


class AuditSink:
    def __init__(self, settings: Settings, audit: CassandraAudit, health: Health) -> None:
        self._settings = settings
        self._audit = audit
        self._health = health
        self._group = f"{settings.kafka.topic_prefix}.audit.{settings.region}"
        self._codec = Codec()
        self.written = 0
        cap = settings.audit.max_rows_per_s
        self._pace = TokenBuckets(rate=cap or 1.0, burst=max(1.0, cap / 10))
        self.cassandra_ok = True

    async def _write(self, rows: list[AuditRow]) -> None:
        """Write every row, retrying failures with capped exponential backoff until all succeed."""
        cfg = self._settings.audit
        delay = cfg.retry_initial_s
        pending = rows
        while pending:
            results: list[bool | Exception] = []
            for start in range(0, len(pending), CONCURRENCY):
                results += await self._audit.record_many(pending[start : start + CONCURRENCY])
            failed = [
                row for row, result in zip(pending, results, strict=True) if isinstance(result, Exception)
            ]
            self.written += len(pending) - len(failed)
            self.cassandra_ok = not failed
            if failed:
                first = next(r for r in results if isinstance(r, Exception))
                log.warning("audit: %d rows not written (%r); retrying in %.1fs", len(failed), first, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, cfg.retry_max_s)
            pending = failed

    async def _paced(self, rows: list[AuditRow]) -> None:
        """Write rows, at most ``max_rows_per_s`` a second when a cap is set: audit is eventual, so
        under a peak it queues in Kafka instead of taking CPU from acceptance and ranking."""
        cap = self._settings.audit.max_rows_per_s
        if not cap:
            await self._write(rows)
            return
        chunk = max(1, int(cap / 10))
        for start in range(0, len(rows), chunk):
            part = rows[start : start + chunk]
            await asyncio.sleep(self._pace.reserve("audit", len(part), time.monotonic()))
            await self._write(part)

    async def run(self, stop: asyncio.Event) -> None:
        consumer = make_consumer(self._settings.kafka, group_id=self._group)
        await consumer.start()
        try:
            topic = self._settings.kafka.topic("applied")
            tps = [TopicPartition(topic, p) for p in await partitions_of(self._settings.kafka, topic)]
            await assign_from_committed(consumer, tps)
            while not stop.is_set():
                polled = await consumer.getmany(*tps, timeout_ms=200, max_records=2000)
                applied = [decoded(self._codec.applied, r.value, f"{r.topic}:{r.partition}:{r.offset}")
                           for rs in polled.values() for r in rs]  # fmt: skip
                rows = [audit_row(a) for a in applied if a is not None]
                if rows:
                    await self._paced(rows)
                    await consumer.commit({tp: rs[-1].offset + 1 for tp, rs in polled.items() if rs})
                self._health.report_lag(topic, await consumer_lag(consumer, tps))
        finally:
            await consumer.stop()
