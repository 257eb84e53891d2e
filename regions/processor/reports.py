"""What a processor reports about the tasks it owns: the lag of every source partition (health), how
much its dedupe memory holds (metrics), and source records retention deleted before it read them."""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable

from aiokafka import AIOKafkaConsumer, TopicPartition

from regions.core.resume import Gap
from regions.processor import metrics
from regions.processor.ownership import OwnedTask
from regions.processor.round import Source
from regions.runtime.health import Health

log = logging.getLogger(__name__)


def report_memory(owned: Iterable[OwnedTask]) -> None:
    now_ms = time.time() * 1000
    for task in owned:
        oldest = task.store.oldest_seen(2**62, 1)
        label = str(task.partition)
        metrics.DEDUPE_REMEMBERED.labels(label).set(task.remembered)
        metrics.DEDUPE_OLDEST_AGE.labels(label).set(max(0.0, (now_ms - oldest[0][1]) / 1000) if oldest else 0)


async def report_lag(
    consumer: AIOKafkaConsumer, health: Health, sources: Iterable[str], owned: Collection[OwnedTask]
) -> None:
    """Records not yet committed, per source topic and owned partition (also what is owned)."""
    tps = [tp for task in owned for tp in task.next_offsets]
    end = await consumer.end_offsets(tps) if tps else {}
    for topic in sources:
        lag = {
            task.partition: max(0, end[tp] - task.next_offsets[tp])
            for task in owned
            for tp in task.next_offsets
            if tp.topic == topic
        }
        health.report_lag(topic, lag)


def report_deleted(source: Source, tp: TopicPartition, gap: Gap) -> None:
    """Records of a source partition deleted unread: whatever awards they held were acknowledged and
    are never applied here. Counted and logged once found; the next round counts a gap into the
    accepting region's position, which every asOf of it then shows."""
    metrics.DELETED_UNREAD.labels(source.region).inc(gap.missing)
    log.error(
        "%s partition %d lost offsets %d..%d to retention before they were read (%d records: awards "
        "acknowledged by %s among them are never applied here); continuing from %d",
        tp.topic, tp.partition, gap.first_missing, gap.first_available - 1, gap.missing, source.region,
        gap.first_available,
    )  # fmt: skip
