"""The processor refuses to start when its changelog is not co-partitioned with its source."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from regions.health import Health
from regions.processor.loop import PartitionsMismatch, Processor
from regions.settings import Settings


async def test_processor_fails_fast_when_changelog_partitions_differ(
    settings: Settings, kafka_ready: None
) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka.bootstrap_servers)
    await admin.start()
    try:
        await admin.create_topics([
            NewTopic(settings.kafka.topic("awards"), num_partitions=6, replication_factor=1),
            NewTopic(settings.kafka.topic("totals"), num_partitions=3, replication_factor=1),
        ])  # fmt: skip
    finally:
        await admin.close()

    with pytest.raises(PartitionsMismatch, match=r"has 6 partitions and .* has 3"):
        await Processor(settings, Health("processor")).run(asyncio.Event())
