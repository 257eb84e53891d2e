"""Which of a task's fetched records a round folds: awards at once, an idle partition's heartbeats
once per idle interval (``Processor._due``)."""

from __future__ import annotations

from typing import Any

from aiokafka import ConsumerRecord, TopicPartition

from regions.processor.loop import Processor
from regions.processor.ownership import OwnedTask
from regions.processor.restore import Restored
from regions.runtime.health import Health
from regions.runtime.settings import Settings
from regions.stores.task_state import MemoryStore
from schema.records import HEARTBEAT_KEY

AWARDS = TopicPartition("lb.awards", 0)


def _record(offset: int, key: bytes) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord(AWARDS.topic, 0, offset, 0, 0, key, b"", None, len(key), 0, [])


def _task(committed_at: float, *keys: bytes) -> OwnedTask:
    producer: Any = None  # never used: only the held records and the last commit's time are read
    task = OwnedTask(0, producer, MemoryStore(), {AWARDS: 0}, Restored("tail", "", 0, 0.0), committed_at)
    task.held = {AWARDS: [_record(i, k) for i, k in enumerate(keys)]}
    return task


def _processor(idle_ms: float) -> Processor:
    settings = Settings().model_copy(deep=True)
    settings.processor.idle_round_interval_ms = idle_ms
    return Processor(settings, Health("processor", {}))


def test_heartbeats_alone_wait_for_the_idle_interval_after_the_last_commit() -> None:
    processor = _processor(1_000)
    task = _task(100.0, HEARTBEAT_KEY, HEARTBEAT_KEY)
    assert not processor._due(task, 100.5)
    assert processor._due(task, 101.0)


def test_an_award_is_folded_at_once_with_the_heartbeats_held_before_it() -> None:
    processor = _processor(1_000)
    task = _task(100.0, HEARTBEAT_KEY, b"board|ann")
    assert processor._due(task, 100.01)


def test_an_idle_interval_of_zero_folds_heartbeats_at_once() -> None:
    assert _processor(0)._due(_task(100.0, HEARTBEAT_KEY), 100.0)
