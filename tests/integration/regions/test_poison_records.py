"""Records a process cannot handle go to reconciliation with the reason, their position and bytes,
and the partition goes on (no crash loop, no record lost without a trace)."""

from __future__ import annotations

import uuid

import httpx
from aiokafka import ConsumerRecord, TopicPartition
from cassandra.cluster import Session

from regions.core.boards import Board
from regions.runtime.settings import Settings
from regions.stores.cassandra.audit import CassandraAudit
from regions.stores.kafka.clients import make_producer, replay
from schema.event_id import event_id, payload_digest
from schema.records import AppliedAward, AwardEvent, Codec, Reconciliation, totals_key
from tests.harness import Region


def _award(board: str, user: str, amount: int, **rules: str) -> AwardEvent:
    match = uuid.uuid4().hex
    return AwardEvent(
        event_id=event_id(board, match, user, "kill"), digest=payload_digest(amount, None),
        board_id=board, match_id=match, user_id=user, award_type="kill", amount=amount,
        occurred_at_ms=None, region="local", accepted_at_ms=1,
        **({"aggregation": "SUM", "sort_order": "DESC", "tie_policy": "USER_ID"} | rules),
    )  # fmt: skip


async def _publish(settings: Settings, topic: str, records: list[tuple[bytes, bytes]]) -> list[int]:
    """(key, value) pairs onto partition 0 of ``topic``, in order; their offsets (the region's
    heartbeats share the partition, so they need not start at 0)."""
    producer = make_producer(settings.kafka)
    await producer.start()
    try:
        return [
            (await producer.send_and_wait(topic, value, key=key, partition=0)).offset
            for key, value in records
        ]
    finally:
        await producer.stop()


async def reconciled(settings: Settings) -> list[Reconciliation]:
    codec, found = Codec(), []
    topic = settings.kafka.topic("reconciliation")

    async def keep(records: list[ConsumerRecord]) -> None:
        found.extend(codec.reconciliation(r.value) for r in records)

    await replay(settings.kafka, [TopicPartition(topic, p) for p in range(settings.kafka.partitions)], keep)
    return found


async def _metrics(region: Region, service: str) -> str:
    async with httpx.AsyncClient() as http:
        return (await http.get(region.health_url(service) + "/metrics")).text


async def test_poison_award_records_are_reconciled_and_the_partition_goes_on(region: Region) -> None:
    board = Board(f"p-{uuid.uuid4().hex[:8]}", "Poison", region.settings.region)
    await region.create_board(board)
    key, codec = totals_key(board.id, "ann"), Codec()
    unknown_rule = codec.encode(_award(board.id, "ann", 5, aggregation="AVERAGE"))
    offsets = await _publish(region.settings, region.settings.kafka.topic("awards"), [
        (key, b"\x93not an award"), (key, unknown_rule), (key, codec.encode(_award(board.id, "ann", 7))),
    ])  # fmt: skip

    await region.wait_for_total(board.id, "ann", 7)  # the record after both poison records is applied

    found = {r.reason: r for r in await reconciled(region.settings)}
    assert set(found) == {"undecodable", "unprocessable"}
    undecodable, unprocessable = found["undecodable"], found["unprocessable"]
    assert (undecodable.source_topic, undecodable.source_partition, undecodable.source_offset) == (
        region.settings.kafka.topic("awards"), 0, offsets[0],
    )  # fmt: skip
    assert undecodable.raw == b"\x93not an award" and undecodable.award is None
    assert unprocessable.raw == unknown_rule and "AVERAGE" in unprocessable.detail
    assert unprocessable.source_offset == offsets[1]
    metrics = await _metrics(region, "processor")
    assert 'lb_processor_reconciled_total{reason="undecodable"} 1.0' in metrics
    assert 'lb_processor_reconciled_total{reason="unprocessable"} 1.0' in metrics
    assert "restarting from durable state" not in region.tail("processor", 1000)


async def test_audit_records_that_cannot_become_rows_are_reconciled_not_dropped(
    region: Region, cassandra_session: Session
) -> None:
    settings, codec = region.settings, Codec()
    board = Board(f"p-{uuid.uuid4().hex[:8]}", "Poison", settings.region)
    too_big = AppliedAward(award=_award(board.id, "bob", 2**63), total=1, version=1,
                           source_partition=0, source_offset=0)  # fmt: skip
    good = AppliedAward(award=_award(board.id, "cy", 3), total=3, version=1, source_partition=0,
                        source_offset=1)  # fmt: skip
    applied_topic = settings.kafka.topic("applied")
    await _publish(settings, applied_topic, [
        (b"k", b"\xc1garbage"), (b"k", codec.encode(too_big)), (b"k", codec.encode(good)),
    ])  # fmt: skip
    audit = CassandraAudit(cassandra_session)

    async def good_row_written() -> bool:
        return await audit.count(good.award.event_id) == 1

    await region.wait_until(good_row_written, what="the audit row after the bad records")

    async def both_reconciled() -> bool:
        return len(await reconciled(settings)) == 2

    await region.wait_until(both_reconciled, what="both bad records in reconciliation")
    found = {r.reason: r for r in await reconciled(settings)}
    assert set(found) == {"undecodable", "audit_refused"}
    assert (found["undecodable"].source_topic, found["undecodable"].source_offset) == (applied_topic, 0)
    assert found["undecodable"].raw == b"\xc1garbage"
    refused = found["audit_refused"]
    assert refused.award == too_big.award and refused.raw == codec.encode(too_big)
    assert refused.source_offset == 1 and "amount" in refused.detail
    assert await audit.count(too_big.award.event_id) == 0
    metrics = await _metrics(region, "audit")
    assert 'lb_audit_reconciled_total{reason="undecodable"} 1.0' in metrics
    assert 'lb_audit_reconciled_total{reason="audit_refused"} 1.0' in metrics
