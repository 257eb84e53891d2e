"""The audit sink on real Kafka and Cassandra: records delivered again after a sink stopped in the
middle of a batch still leave one row each, and the metrics tell rows written from rows found;
records deleted before the sink wrote their rows are counted and passed, never waited for."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from aiokafka import TopicPartition
from cassandra.cluster import Session
from prometheus_client import REGISTRY

from regions.audit.loop import AuditSink, audit_row
from regions.core.audit_progress import intent_metadata
from regions.runtime.health import Health
from regions.runtime.settings import Settings
from regions.stores.cassandra.audit import CassandraAudit
from regions.stores.cassandra.session import CassandraConnection
from regions.stores.kafka.clients import make_consumer, make_producer
from schema.event_id import event_id, payload_digest
from schema.records import AppliedAward, AwardEvent, Codec
from tests.clusters import delete_before

# Record times within the applied topic's retention: older ones the broker may delete at any moment.
ACCEPTED_MS = int(time.time()) * 1000


def _applied(board: str, i: int) -> AppliedAward:
    match = uuid.uuid4().hex
    award = AwardEvent(
        event_id=event_id(board, match, f"u{i}", "kill"), digest=payload_digest(i + 1, None), board_id=board,
        match_id=match, user_id=f"u{i}", award_type="kill", amount=i + 1, occurred_at_ms=None, region="local",
        accepted_at_ms=ACCEPTED_MS + i, aggregation="SUM", sort_order="DESC", tie_policy="USER_ID",
    )  # fmt: skip
    return AppliedAward(award=award, total=i + 1, version=1, source_partition=0, source_offset=i)


async def _publish(settings: Settings, awards: list[AppliedAward]) -> list[int]:
    """Onto partition 0 of the applied topic, each with a known record time; their offsets."""
    producer, codec = make_producer(settings.kafka), Codec()
    await producer.start()
    try:
        sent = [await producer.send(settings.kafka.topic("applied"), codec.encode(a), key=b"k", partition=0,
                                    timestamp_ms=ACCEPTED_MS + 500 + i) for i, a in enumerate(awards)]  # fmt: skip
        return [(await s).offset for s in sent]
    finally:
        await producer.stop()


async def _commit(settings: Settings, offset: int, metadata: str) -> None:
    """What a sink that stopped in the middle of a batch left committed for its group."""
    tp = TopicPartition(settings.kafka.topic("applied"), 0)
    consumer = make_consumer(
        settings.kafka, group_id=f"{settings.kafka.topic_prefix}.audit.{settings.region}"
    )
    await consumer.start()
    try:
        consumer.assign([tp])
        await consumer.commit({tp: (offset, metadata)})
    finally:
        await consumer.stop()


def _count(name: str) -> float:
    return REGISTRY.get_sample_value(name) or 0.0


@contextlib.asynccontextmanager
async def _sink(settings: Settings, session: Session) -> AsyncIterator[None]:
    audit = CassandraConnection(
        lambda: session, CassandraAudit, where="the tests' session", owns_session=False
    )
    await audit.run()
    stop = asyncio.Event()
    running = asyncio.create_task(AuditSink(settings, audit, Health("audit")).run(stop))
    try:
        yield
    finally:
        stop.set()
        await running


async def _until_backlog_done(settings: Settings, end: int) -> None:
    """Until the sink's group has committed past ``end`` (every row of the batch handled)."""
    tp = TopicPartition(settings.kafka.topic("applied"), 0)
    consumer = make_consumer(
        settings.kafka, group_id=f"{settings.kafka.topic_prefix}.audit.{settings.region}"
    )
    await consumer.start()
    try:
        deadline = asyncio.get_running_loop().time() + 60
        while ((await consumer.committed(tp)) or 0) <= end:
            assert asyncio.get_running_loop().time() < deadline, "the audit sink did not commit its batch"
            await asyncio.sleep(0.1)
    finally:
        await consumer.stop()


async def _redelivered(
    settings: Settings, session: Session, *, intent: bool
) -> tuple[list[AppliedAward], float, float]:
    """20 applied awards; an earlier sink wrote the rows of the first 8 and stopped before committing,
    having said (``intent``) or not how far its batch went. Then a sink runs over all of them.
    Returns the awards and how many rows the sink counted written and present."""
    board = f"b-{uuid.uuid4().hex[:8]}"
    awards = [_applied(board, i) for i in range(20)]
    offsets = await _publish(settings, awards)
    earlier = CassandraAudit(session)
    rows = [audit_row(a, ACCEPTED_MS + 500 + i) for i, a in enumerate(awards[:8])]
    assert await earlier.write_many(rows) == [None] * 8
    await _commit(settings, offsets[0], intent_metadata(offsets[11] + 1) if intent else "")
    written, present = _count("lb_audit_rows_written_total"), _count("lb_audit_rows_present_total")
    async with _sink(settings, session):
        await _until_backlog_done(settings, offsets[-1])
    written = _count("lb_audit_rows_written_total") - written
    return awards, written, _count("lb_audit_rows_present_total") - present


async def _rows_per_award(session: Session, awards: list[AppliedAward]) -> list[int]:
    audit = CassandraAudit(session)
    return [await audit.count(a.award.event_id) for a in awards]


async def test_a_batch_delivered_again_after_a_stop_leaves_one_row_each_and_counts_rows_once(
    topics: Settings, cassandra_session: Session
) -> None:
    awards, written, present = await _redelivered(topics, cassandra_session, intent=True)

    assert await _rows_per_award(cassandra_session, awards) == [1] * 20
    assert (written, present) == (12, 8)  # the 8 rows written before are found, not written again
    stored = cassandra_session.execute(
        "SELECT amount, recorded_at, WRITETIME(amount) AS at FROM award_history WHERE event_id = %s",
        (awards[3].award.event_id,),
    ).one()
    applied_at = datetime.fromtimestamp((ACCEPTED_MS + 503) / 1000, UTC).replace(tzinfo=None)
    assert (stored.amount, stored.recorded_at, stored.at) == (4, applied_at, (ACCEPTED_MS + 503) * 1000)


async def test_without_the_intent_the_rows_are_still_one_each_but_counted_as_written_again(
    topics: Settings, cassandra_session: Session
) -> None:
    """Negative control: the commit's intent is what keeps the count honest, not luck."""
    awards, written, present = await _redelivered(topics, cassandra_session, intent=False)

    assert await _rows_per_award(cassandra_session, awards) == [1] * 20
    assert (written, present) == (20, 0)


async def test_records_deleted_before_their_rows_were_written_are_counted_and_passed(
    topics: Settings, cassandra_session: Session
) -> None:
    """A sink behind by longer than the applied topic keeps records (a long Cassandra outage): the
    rows of the deleted records are missing for good. The sink says how many and goes on from the
    oldest record left, instead of waiting for them or passing them in silence."""
    board = f"b-{uuid.uuid4().hex[:8]}"
    awards = [_applied(board, i) for i in range(20)]
    offsets = await _publish(topics, awards)
    await _commit(topics, offsets[0], "")
    await delete_before(topics, 0, offsets[10], topic="applied")
    deleted = _count("lb_audit_deleted_records_total")
    async with _sink(topics, cassandra_session):
        await _until_backlog_done(topics, offsets[-1])

    assert _count("lb_audit_deleted_records_total") - deleted == 10
    assert await _rows_per_award(cassandra_session, awards) == [0] * 10 + [1] * 10
