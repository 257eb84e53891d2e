"""The three real servers work through the project's own adapters."""

from __future__ import annotations

import asyncio
import uuid

from cassandra.cluster import Session
from redis.asyncio import Redis

from regions.cassandra_audit import AuditRow, CassandraAudit
from regions.kafka_clients import make_consumer, make_producer
from regions.redis_projection import ProjectedTotal, RedisProjection
from regions.settings import Settings


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


async def test_cassandra_insert_if_not_exists_applies_once(cassandra_session: Session) -> None:
    audit = CassandraAudit(cassandra_session)
    row = AuditRow(
        event_id=f"ev-{uuid.uuid4().hex}",
        board_id="b",
        user_id="u",
        match_id="m",
        award_type="kill",
        amount=5,
        occurred_at_ms=1_700_000_000_000,
        region="local",
        source_partition=0,
        source_offset=7,
        total=5,
        version=1,
    )

    first = await audit.record(row)
    second = await audit.record(row)

    assert (first, second) == (True, False)
    assert await audit.count(row.event_id) == 1


async def test_cassandra_many_inserts_report_each_row(cassandra_session: Session) -> None:
    audit = CassandraAudit(cassandra_session)
    rows = [
        AuditRow(
            event_id=f"ev-{uuid.uuid4().hex}", board_id="b", user_id=f"u{i}", match_id="m", award_type="kill",
            amount=i, occurred_at_ms=None, region="local", source_partition=0, source_offset=i, total=i, version=1,
        )
        for i in range(50)
    ]  # fmt: skip
    await audit.record(rows[0])

    results = await audit.record_many(rows)

    assert results == [False] + [True] * 49
    assert [await audit.count(r.event_id) for r in rows] == [1] * 50
