"""The processor refuses a changelog that is not co-partitioned with its source, or topics of another
partition count than its settings, and waits for topics that do not exist yet."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError

from regions.processor import loop as loop_module
from regions.processor import restore as restore_module
from regions.processor.loop import Processor
from regions.runtime.health import Health
from regions.runtime.settings import KafkaSettings, Settings
from regions.stores.kafka.clients import TopicMissing, make_consumer, partitions_of
from regions.stores.kafka.topics import PartitionsMismatch, ensure_topics


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

    # The settings say 6, as the awards have: the changelogs' 3 are named, and the setting.
    with pytest.raises(PartitionsMismatch, match=r"LB_KAFKA__PARTITIONS\) is 6 but .*dedupe.*totals.* have 3"):
        await Processor(settings, Health("processor")).run(asyncio.Event())


async def test_topics_of_another_partition_count_than_the_settings_are_refused(
    topics: Settings,
) -> None:
    """Topics made with 6 partitions, settings that say 2: bootstrap and the processor both refuse,
    naming the setting and what to do (readers would judge freshness over 2 of the 6 partitions)."""
    fewer = topics.model_copy(update={"kafka": topics.kafka.model_copy(update={"partitions": 2})})
    expected = r"LB_KAFKA__PARTITIONS\) is 2 but .*\.v1 ha(s|ve) 6.*Set LB_KAFKA__PARTITIONS"
    with pytest.raises(PartitionsMismatch, match=expected):
        await ensure_topics(fewer.kafka)
    with pytest.raises(PartitionsMismatch, match=expected):
        await Processor(fewer, Health("processor")).run(asyncio.Event())
    assert await ensure_topics(topics.kafka) == []  # the settings the topics were made with still pass


async def test_processor_started_before_bootstrap_waits_for_the_topics(
    settings: Settings, kafka_ready: None
) -> None:
    # A Kafka error: the process retries with backoff until the topics exist, and is not ready meanwhile.
    processor = Processor(settings, Health("processor"))
    with pytest.raises(TopicMissing, match=r"awards\.v1 does not exist .*'ops/lb bootstrap'") as missing:
        await processor.run(asyncio.Event())
    assert isinstance(missing.value, KafkaError)
    assert not processor.restored.is_set()


async def test_a_restore_longer_than_the_poll_interval_keeps_the_group_stable(
    topics: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each partition's restore takes 8 s and the consumer's poll interval is 5 s: the takeover runs
    outside the rebalance callback while the consumer keeps polling, so the member stays in the group
    (one assignment, never a rebalance storm), and it processes once the restores end."""
    settings = topics
    slow = restore_module.restore

    async def slow_restore(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(8)
        return await slow(*args, **kwargs)

    def short_poll(*args: Any, **kwargs: Any) -> Any:
        consumer = make_consumer(*args, **kwargs)
        consumer._max_poll_interval_ms = 5_000  # (the client's own setting, not exposed by make_consumer)
        return consumer

    monkeypatch.setattr(loop_module, "restore", slow_restore)
    monkeypatch.setattr(loop_module, "make_consumer", short_poll)
    processor = Processor(settings, Health("processor"))
    assignments = 0
    take = processor.take

    async def counted(*args: Any) -> None:
        nonlocal assignments
        assignments += 1
        await take(*args)

    monkeypatch.setattr(processor, "take", counted)
    stop = asyncio.Event()
    running = asyncio.create_task(processor.run(stop))
    try:
        await asyncio.wait_for(processor.restored.wait(), 60)
        await asyncio.sleep(8)  # past another poll interval
        assert not running.done()
        assert assignments == 1 and processor.restored.is_set()
        assert sorted(processor.owned) == list(range(settings.kafka.partitions))
    finally:
        stop.set()
        await asyncio.wait_for(running, 60)
