"""The three real servers work through the project's own adapters."""

from __future__ import annotations

import asyncio
import uuid

from cassandra import InvalidRequest
from cassandra.cluster import Session
from redis.asyncio import Redis

from regions.runtime.settings import Settings
from regions.stores.cassandra.audit import AuditRow, CassandraAudit
from regions.stores.kafka.clients import make_consumer, make_producer
from regions.stores.redis.projection import ProjectedTotal, RedisProjection


async def _read_all(settings: Settings, topic: str, expected: int) -> list[bytes]:
    consumer = make_consumer(settings.kafka, topic, group_id=None)
    await consumer.start()
    try:
        values: list[bytes] = []
        deadline = asyncio.get_running_loop().time() + 20
        while len(values) < expected and asyncio.get_running_loop().time() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            values += [r.value for records in batch.values() for r in records]
        # One more poll: anything beyond the expected records would show here.
        batch = await consumer.getmany(timeout_ms=1000)
        values += [r.value for records in batch.values() for r in records]
        return values
    finally:
        await consumer.stop()


async def test_kafka_read_committed_sees_committed_transaction_and_not_aborted(
    topics: Settings,
) -> None:
    topic = topics.kafka.topic("awards")
    producer = make_producer(topics.kafka, transactional_id=f"smoke-{uuid.uuid4().hex}")
    await producer.start()
    try:
        async with producer.transaction():
            await producer.send_and_wait(topic, b"committed-1", key=b"k", partition=0)
            await producer.send_and_wait(topic, b"committed-2", key=b"k", partition=0)
        await producer.begin_transaction()
        await producer.send_and_wait(topic, b"aborted", key=b"k", partition=0)
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send_and_wait(topic, b"committed-3", key=b"k", partition=0)
    finally:
        await producer.stop()

    values = await _read_all(topics, topic, expected=3)

    assert values == [b"committed-1", b"committed-2", b"committed-3"]


async def test_redis_lua_applies_only_newer_versions(settings: Settings, redis_client: Redis) -> None:
    projection = RedisProjection(redis_client, settings.redis.key_prefix)
    first = await projection.apply("smoke-board", [ProjectedTotal("alice", 2, 50, -50.0, "alice")])
    stale = await projection.apply("smoke-board", [ProjectedTotal("alice", 1, 10, -10.0, "alice")])
    same = await projection.apply("smoke-board", [ProjectedTotal("alice", 2, 99, -99.0, "alice")])

    assert (first.users, stale.users, same.users) == (["alice"], [], [])
    assert (first.sequence, stale.sequence) == (1, 0)
    assert await projection.total_of("smoke-board", "alice") == 50
    assert await projection.version_of("smoke-board", "alice") == 2


def _row(i: int = 0, **changes: object) -> AuditRow:
    values: dict[str, object] = dict(
        event_id=f"ev-{uuid.uuid4().hex}", board_id="b", user_id=f"u{i}", match_id="m", award_type="kill",
        amount=i + 1, occurred_at_ms=None, region="local", source_partition=0, source_offset=i, total=i + 1,
        version=1, applied_at_ms=1_700_000_000_500 + i,
    )  # fmt: skip
    return AuditRow(**(values | changes))  # type: ignore[arg-type]


_STORED = (
    "SELECT event_id, board_id, user_id, match_id, award_type, amount, occurred_at, region, source_partition, "
    "source_offset, total, version, recorded_at, WRITETIME(amount) AS written FROM award_history WHERE event_id = %s"
)


async def test_cassandra_audit_row_written_again_is_the_same_single_row(cassandra_session: Session) -> None:
    audit = CassandraAudit(cassandra_session)
    row = _row(occurred_at_ms=1_699_999_999_000)

    assert await audit.present_many([row.event_id]) == [False]
    assert await audit.write_many([row]) == [None]
    first = cassandra_session.execute(_STORED, (row.event_id,)).all()
    assert await audit.write_many([row]) == [None]
    second = cassandra_session.execute(_STORED, (row.event_id,)).all()

    assert first == second and len(first) == 1  # byte for byte, its write time included
    assert first[0].written == row.applied_at_ms * 1000
    assert await audit.present_many([row.event_id]) == [True]


async def test_cassandra_audit_batches_fail_only_the_rows_that_cannot_be_written(
    cassandra_session: Session,
) -> None:
    audit = CassandraAudit(cassandra_session, batch_rows=10)
    rows = [_row(i) for i in range(50)]
    rows[17] = _row(17, amount=2**63)  # not a bigint: the driver cannot bind it
    rows[33] = _row(33, event_id="e" * 70_000)  # binds, but Cassandra refuses a key over 64 KiB

    results = await audit.write_many(rows)

    assert [i for i, r in enumerate(results) if r is not None] == [17, 33]
    assert isinstance(results[17], TypeError) and "amount" in str(results[17])
    assert isinstance(results[33], InvalidRequest)
    written = [i for i, r in enumerate(rows) if i != 33 and await audit.count(r.event_id) == 1]
    assert written == [i for i in range(50) if i not in (17, 33)]


async def test_cassandra_audit_keeps_the_latest_application_of_an_event_id_whatever_the_order(
    cassandra_session: Session,
) -> None:
    """An event id applied again (a replay after a processor fix): the later application's row
    stays, every column of it, even when the earlier one is written last."""
    audit = CassandraAudit(cassandra_session)
    earlier = _row(amount=5, total=5, version=1, source_offset=10)
    later = _row(event_id=earlier.event_id, amount=5, total=7, version=2, source_offset=99,
                 applied_at_ms=earlier.applied_at_ms + 600_000)  # fmt: skip

    assert await audit.write_many([later]) == [None]
    assert await audit.write_many([earlier]) == [None]

    stored = cassandra_session.execute(_STORED, (earlier.event_id,)).all()
    assert [(r.total, r.version, r.source_offset, r.written) for r in stored] == [
        (7, 2, 99, later.applied_at_ms * 1000)
    ]
