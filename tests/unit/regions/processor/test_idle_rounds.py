"""Which of a task's fetched records a round folds: awards at once, an idle partition's heartbeats
once every source's has arrived or the oldest has waited the idle interval (``Processor._due``)."""

from __future__ import annotations

from typing import Any

from aiokafka import ConsumerRecord, TopicPartition

from regions.processor.loop import Processor
from regions.processor.ownership import OwnedTask
from regions.processor.restore import Restored
from regions.runtime.health import Health
from regions.runtime.settings import RegionEndpoint, Settings
from regions.stores.task_state import MemoryStore
from schema.records import HEARTBEAT_KEY
from schema.replication import replicated_awards_topic

SETTINGS = Settings()
AWARDS = TopicPartition(SETTINGS.kafka.topic("awards"), 0)
FROM_US = TopicPartition(SETTINGS.kafka.topic(replicated_awards_topic("us")), 0)


def _record(tp: TopicPartition, offset: int, key: bytes) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord(tp.topic, 0, offset, 0, 0, key, b"", None, len(key), 0, [])


def _task(held_since: float, *keys: bytes, source: TopicPartition = AWARDS) -> OwnedTask:
    producer: Any = None  # never used: only the held records and when they were fetched are read
    task = OwnedTask(0, producer, MemoryStore(), {AWARDS: 0, FROM_US: 0}, Restored("tail", "", 0, 0.0))
    task.held = {source: [_record(source, i, k) for i, k in enumerate(keys)]}
    task.held_since = held_since
    return task


def _processor(idle_ms: float) -> Processor:
    """The eu processor of two regions: its sources are eu's awards and those copied from us."""
    settings = Settings().model_copy(deep=True)
    endpoint = RegionEndpoint(kafka_bootstrap_servers="127.0.0.1:1")
    settings.region, settings.regions = "eu", {"eu": endpoint, "us": endpoint}
    settings.processor.idle_round_interval_ms = idle_ms
    processor = Processor(settings, Health("processor", {}))
    assert set(processor.sources) == {AWARDS.topic, FROM_US.topic}
    return processor


def test_heartbeats_of_one_region_wait_for_the_idle_interval_after_the_first_arrived() -> None:
    processor = _processor(1_000)
    task = _task(100.0, HEARTBEAT_KEY, HEARTBEAT_KEY)
    assert not processor._due(task, 100.5)
    assert processor._due(task, 101.0)


def test_heartbeats_of_every_region_are_folded_together_at_once() -> None:
    processor = _processor(1_000)
    task = _task(100.0, HEARTBEAT_KEY)
    assert not processor._due(task, 100.2)
    task.held[FROM_US] = [_record(FROM_US, 0, HEARTBEAT_KEY)]
    assert processor._due(task, 100.2)


def test_an_award_is_folded_at_once_with_the_heartbeats_held_before_it() -> None:
    processor = _processor(1_000)
    task = _task(100.0, HEARTBEAT_KEY, b"board|ann", source=FROM_US)
    assert processor._due(task, 100.01)


def test_an_idle_interval_of_zero_folds_heartbeats_at_once() -> None:
    assert _processor(0)._due(_task(100.0, HEARTBEAT_KEY), 100.0)
