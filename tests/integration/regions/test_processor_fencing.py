"""Taking a partition over fences every earlier owner, in-process and deterministic.

Instance A owns partition 0; instance B takes it over (as after a rebalance that A, frozen, did not
notice). A's next transaction for the partition is refused and leaves nothing in the changelog;
B's goes through and B continues from the state and offset A had committed. Each instance has its own
state store, as on two hosts.
"""

from __future__ import annotations

import msgspec
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import KafkaError

from regions.processor.loop import Processor
from regions.runtime.health import Health
from regions.runtime.settings import Settings
from regions.stores.kafka.clients import make_consumer, make_producer, replay
from regions.stores.kafka.topics import ensure_topics
from schema.event_id import event_id, payload_digest
from schema.records import CONTROL_PREFIX, AwardEvent, Codec, PlayerTotal, totals_key


def _award(match: str, amount: int) -> AwardEvent:
    return AwardEvent(
        event_id=event_id("board", match, "ann", "kill"), digest=payload_digest(amount, None),
        board_id="board", match_id=match, user_id="ann", award_type="kill", amount=amount,
        occurred_at_ms=None, region="local", accepted_at_ms=0, aggregation="SUM", sort_order="DESC",
        tie_policy="USER_ID",
    )  # fmt: skip


def _instance(settings: Settings, name: str) -> Processor:
    """A processor instance with a state directory of its own, as on its own host."""
    store_dir = f"{settings.processor.store_dir}/{name}"
    own = settings.model_copy(
        update={"processor": settings.processor.model_copy(update={"store_dir": store_dir})}
    )
    return Processor(own, Health("processor"))


async def _publish(settings: Settings, tp: TopicPartition, *awards: AwardEvent) -> None:
    producer = make_producer(settings.kafka)
    await producer.start()
    try:
        for award in awards:
            await producer.send_and_wait(
                tp.topic, Codec().encode(award), key=totals_key("board", "ann"), partition=tp.partition
            )
    finally:
        await producer.stop()


async def _read(consumer: AIOKafkaConsumer, tp: TopicPartition, count: int) -> list[ConsumerRecord]:
    records: list[ConsumerRecord] = []
    while len(records) < count:
        records += (await consumer.getmany(tp, timeout_ms=1000)).get(tp, [])
    return records


async def _changelog(settings: Settings) -> list[PlayerTotal]:
    found: list[PlayerTotal] = []

    async def keep(records: list[ConsumerRecord]) -> None:
        found.extend(Codec().totals(r.value) for r in records if not r.key.startswith(CONTROL_PREFIX))  # type: ignore[misc]

    await replay(settings.kafka, [TopicPartition(settings.kafka.topic("totals"), 0)], keep)
    return found


async def test_a_partition_taken_over_fences_its_earlier_owner(settings: Settings, kafka_ready: None) -> None:
    await ensure_topics(settings.kafka)
    tp = TopicPartition(settings.kafka.topic("awards"), 0)
    a, b = (_instance(settings, name) for name in ("a", "b"))
    group = f"{settings.kafka.topic_prefix}.processor.{settings.region}"
    consumers = [make_consumer(settings.kafka, group_id=group) for _ in range(2)]
    for consumer in consumers:
        await consumer.start()
        consumer.assign([tp])
    try:
        await _publish(settings, tp, _award("m1", 5))
        await a.prepare()
        await b.prepare()
        await a.take(consumers[0], [tp])
        await a.settle(consumers[0])
        await a.process_task(a.owned[0], {tp: await _read(consumers[0], tp, 1)})

        await _publish(settings, tp, _award("m2", 7))
        stale = await _read(consumers[0], tp, 1)
        await b.take(consumers[1], [tp])  # B fences A, restores ann = 5 and continues after m1
        await b.settle(consumers[1])
        assert (player := b.owned[0].store.player(("board", "ann"))) is not None and player.total == 5

        fenced: KafkaError | None = None
        try:
            await a.process_task(a.owned[0], {tp: stale})
        except KafkaError as exc:
            fenced = exc
        assert fenced is not None, "the earlier owner committed after it was fenced"

        await b.process_task(b.owned[0], {tp: await _read(consumers[1], tp, 1)})
        totals = [(t.total, t.version) for t in await _changelog(settings)]
        assert totals == [(5, 1), (12, 2)]
    finally:
        for consumer in consumers:
            await consumer.stop()
        await a.close()
        await b.close()


async def test_records_that_are_not_awards_go_to_reconciliation_and_the_partition_goes_on(
    settings: Settings, kafka_ready: None
) -> None:
    await ensure_topics(settings.kafka)
    tp = TopicPartition(settings.kafka.topic("awards"), 0)
    processor = _instance(settings, "a")
    consumer = make_consumer(
        settings.kafka, group_id=f"{settings.kafka.topic_prefix}.processor.{settings.region}"
    )
    await consumer.start()
    consumer.assign([tp])
    try:
        producer = make_producer(settings.kafka)
        await producer.start()
        try:
            await producer.send_and_wait(tp.topic, b"\xc1 not msgpack", key=b"k", partition=0)
            not_hex = msgspec.structs.replace(_award("m0", 1), event_id="z" * 32)
            await producer.send_and_wait(tp.topic, Codec().encode(not_hex), key=b"k", partition=0)
        finally:
            await producer.stop()
        await _publish(settings, tp, _award("m1", 5))
        await processor.prepare()
        await processor.take(consumer, [tp])
        await processor.settle(consumer)
        await processor.process_task(processor.owned[0], {tp: await _read(consumer, tp, 3)})

        assert [(t.total, t.version) for t in await _changelog(settings)] == [(5, 1)]
        reconciled: list[str] = []

        async def keep(records: list[ConsumerRecord]) -> None:
            reconciled.extend(Codec().reconciliation(r.value).reason for r in records)

        await replay(settings.kafka, [TopicPartition(settings.kafka.topic("reconciliation"), 0)], keep)
        assert reconciled == ["undecodable", "undecodable"]
    finally:
        await consumer.stop()
        await processor.close()
