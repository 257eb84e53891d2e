"""Records a process cannot handle go to reconciliation with the reason, their position and bytes,
and the partition goes on (no crash loop, no record lost without a trace)."""

from __future__ import annotations

import uuid

import httpx
from aiokafka import ConsumerRecord, TopicPartition

from regions.core.boards import Board
from regions.kafka_clients import make_producer, replay
from regions.settings import Settings
from schema.event_id import event_id, payload_digest
from schema.records import AwardEvent, Codec, Reconciliation, totals_key
from tests.harness import Region


def _award(board: str, user: str, amount: int, **rules: str) -> AwardEvent:
    match = uuid.uuid4().hex
    return AwardEvent(
        event_id=event_id(board, match, user, "kill"), digest=payload_digest(amount, None),
        board_id=board, match_id=match, user_id=user, award_type="kill", amount=amount,
        occurred_at_ms=None, region="local", accepted_at_ms=1,
        **({"aggregation": "SUM", "sort_order": "DESC", "tie_policy": "USER_ID"} | rules),
    )  # fmt: skip


async def _publish(settings: Settings, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    """(key, value) pairs onto partition 0 of ``topic``, in order."""
    producer = make_producer(settings.kafka)
    await producer.start()
    try:
        for key, value in records:
            await producer.send_and_wait(topic, value, key=key, partition=0)
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
    await _publish(region.settings, region.settings.kafka.topic("awards"), [
        (key, b"\x93not an award"), (key, unknown_rule), (key, codec.encode(_award(board.id, "ann", 7))),
    ])  # fmt: skip

    await region.wait_for_total(board.id, "ann", 7)  # the record after both poison records is applied

    found = {r.reason: r for r in await reconciled(region.settings)}
    assert set(found) == {"undecodable", "unprocessable"}
    undecodable, unprocessable = found["undecodable"], found["unprocessable"]
    assert (undecodable.source_topic, undecodable.source_partition, undecodable.source_offset) == (
        region.settings.kafka.topic("awards"), 0, 0,
    )  # fmt: skip
    assert undecodable.raw == b"\x93not an award" and undecodable.award is None
    assert unprocessable.raw == unknown_rule and "AVERAGE" in unprocessable.detail
    assert unprocessable.source_offset == 1
    metrics = await _metrics(region, "processor")
    assert 'lb_processor_reconciled_total{reason="undecodable"} 1.0' in metrics
    assert 'lb_processor_reconciled_total{reason="unprocessable"} 1.0' in metrics
    assert "restarting from durable state" not in region.tail("processor", 1000)

