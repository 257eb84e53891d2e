"""The intake's producer after the brokers refused its sequence numbers (as when a broker restart
truncated the log it had written): the awards of that request are refused, a new producer takes over,
and the next awards and heartbeats are acknowledged instead of being refused until a restart."""

from __future__ import annotations

from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import OutOfOrderSequenceNumber

from regions.intake.heartbeats import HeartbeatWriter
from regions.runtime.metrics import INTAKE_PRODUCER_RENEWALS
from regions.runtime.settings import Settings
from regions.stores.kafka.clients import (
    AcceptanceUnavailable,
    AwardPublisher,
    RenewableProducer,
    make_producer,
)
from tests.clusters import read_all
from tests.harness import Region


def _skip_sequences(producer: AIOKafkaProducer, topic: str, partitions: int) -> None:
    """The producer's next sequence number of every partition moved on by 5, as if records the broker
    acknowledged were lost by it: the broker refuses the next batch as out of order."""
    for partition in range(partitions):
        producer._txn_manager.increment_sequence_number(TopicPartition(topic, partition), 5)


async def _renewed(producer: RenewableProducer, failed: AIOKafkaProducer) -> None:
    async def taken_over() -> bool:
        return producer.current is not failed

    await Region.wait_until(taken_over, 30, "a new producer taking over")


async def test_a_refused_sequence_fails_that_request_and_a_new_producer_takes_the_next(topics: Settings) -> None:
    kafka = topics.kafka
    topic = kafka.topic("awards")
    producer = RenewableProducer(lambda: make_producer(kafka))
    await producer.start()
    publisher = AwardPublisher(producer, topic, kafka.delivery_timeout_s)
    heartbeat = HeartbeatWriter(producer, topic, topics.region, interval_s=10)
    renewals = INTAKE_PRODUCER_RENEWALS._value.get()
    try:
        [(partition, first)] = await publisher.publish([(b"b|ann", b"before")])

        refused = producer.current
        _skip_sequences(refused, topic, kafka.partitions)
        try:
            await publisher.publish([(b"b|ann", b"refused")])
            raise AssertionError("an award sent with a skipped sequence number was acknowledged")
        except AcceptanceUnavailable as exc:
            assert isinstance(exc.__cause__, OutOfOrderSequenceNumber), repr(exc.__cause__)
        await _renewed(producer, refused)
        [(partition_after, after)] = await publisher.publish([(b"b|ann", b"after")])
        assert INTAKE_PRODUCER_RENEWALS._value.get() == renewals + 1

        beating = producer.current  # the heartbeat's refusal renews the producer the same way
        _skip_sequences(beating, topic, kafka.partitions)
        try:
            await heartbeat.beat()
            raise AssertionError("a heartbeat sent with a skipped sequence number was acknowledged")
        except OutOfOrderSequenceNumber:
            pass
        await _renewed(producer, beating)
        await heartbeat.beat()
        [(_, last)] = await publisher.publish([(b"b|ann", b"last")])
    finally:
        await producer.stop()

    values = [r.value for r in await read_all(kafka, topic, kafka.partitions) if r.key == b"b|ann"]
    assert values == [b"before", b"after", b"last"]  # the refused award was never written
    assert partition_after == partition and first < after < last
