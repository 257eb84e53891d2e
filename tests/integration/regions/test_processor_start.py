"""The processor refuses a changelog that is not co-partitioned with its source, and waits for topics
that do not exist yet."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError

from regions.health import Health
from regions.kafka_clients import TopicMissing, partitions_of
from regions.processor.loop import PartitionsMismatch, Processor
from regions.settings import KafkaSettings, Settings


async def wait_until_described(kafka: KafkaSettings, topic: str) -> None:
    for _ in range(300):
        try:
            await partitions_of(kafka, topic)
            return
        except TopicMissing:
            await asyncio.sleep(0.1)
    raise TimeoutError(f"{topic} is not described")


async def test_processor_fails_fast_when_changelog_partitions_differ(
    settings: Settings, kafka_ready: None
) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka.bootstrap_servers)
    await admin.start()
    try:
        await admin.create_topics([
            NewTopic(settings.kafka.topic("awards"), num_partitions=6, replication_factor=1),
            NewTopic(settings.kafka.topic("totals"), num_partitions=3, replication_factor=1),
            NewTopic(settings.kafka.topic("dedupe"), num_partitions=3, replication_factor=1),
        ])  # fmt: skip
    finally:
        await admin.close()
    for topic in ("awards", "totals", "dedupe"):  # the brokers know a new topic a moment after its creation
        await wait_until_described(settings.kafka, settings.kafka.topic(topic))

    with pytest.raises(PartitionsMismatch, match=r"has 6 partitions and .* has 3"):
        await Processor(settings, Health("processor")).run(asyncio.Event())


async def test_processor_started_before_bootstrap_waits_for_the_topics(
    settings: Settings, kafka_ready: None
) -> None:
    # A Kafka error: the process retries with backoff until the topics exist, and is not ready meanwhile.
    processor = Processor(settings, Health("processor"))
    with pytest.raises(TopicMissing, match=r"awards\.v1 does not exist .*'ops/lb bootstrap'") as missing:
        await processor.run(asyncio.Event())
    assert isinstance(missing.value, KafkaError)
    assert not processor.restored.is_set()
