"""One round of one owned task in one Kafka transaction: its records folded
(``regions.processor.round``) and sent with the consumer offsets of every source partition; the store
is written only after the commit succeeded, with the changelog offsets it then reflects.
"""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.structs import RecordMetadata

from regions.core.forgetting import forget_before, should_forget
from regions.processor import metrics
from regions.processor.ownership import OwnedTask
from regions.processor.round import FORGET_BATCH, Output, Round, Source
from regions.runtime.settings import Settings
from schema.records import Codec

FORGET_STEP_MS = 60_000
"""The dedupe memory forgets in steps of this much stream time (one scan of its time index each)."""


class TaskTransactions:
    """Runs the rounds of the owned tasks, one transaction each."""

    def __init__(
        self, settings: Settings, sources: dict[str, Source], changelogs: tuple[str, ...], group: str
    ) -> None:
        self._kafka, self._cfg = settings.kafka, settings.processor
        self._sources, self._changelogs, self._group = sources, changelogs, group
        self._codec = Codec()

    async def process(self, task: OwnedTask, batch: dict[TopicPartition, list[ConsumerRecord]]) -> Round:
        """One transaction for one task's records of every source; the store is written after commit."""
        fold = Round(self._kafka, self._codec, task.store, task.partition, self._cfg.dedupe_horizon_s * 1000,
                     honour_cutoffs=self._cfg.honour_cutoffs,
                     forget_event_ids=self._cfg.fault_forget_event_ids)  # fmt: skip
        self._forget(task, fold)
        deleted = dict(task.deleted)
        for tp, gap in deleted.items():
            fold.deleted(self._sources[tp.topic], gap)
        for tp, records in batch.items():
            source = self._sources[tp.topic]
            for record in records:
                fold.add(source, record)
        fold.finish()
        out = fold.out + fold.watermarks()
        # The coordinator writes commit markers after it answers; a transaction begun before they are
        # written is refused (CONCURRENT_TRANSACTIONS) and the client backs off 20 ms.
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, task.committed_at + self._cfg.commit_gap_ms / 1000 - loop.time()))
        started = loop.time()
        async with task.producer.transaction():
            # Everything stays on the task's partition: the changelogs are co-partitioned with the sources.
            ends = await send_batched(task.producer, task.partition, out)
            await task.producer.send_offsets_to_transaction(fold.offsets, self._group)
        task.committed_at = loop.time()
        metrics.TRANSACTION_SECONDS.observe(task.committed_at - started)
        changelog = {topic: end for topic, end in ends.items() if topic in self._changelogs}
        task.store.write(fold.store_batch(changelog))
        task.next_offsets.update(fold.offsets)
        for tp in deleted:
            task.deleted.pop(tp, None)
        task.remembered += fold.counts["dedupe_remembered"] - fold.counts["dedupe_forgotten"]
        metrics.count_round(fold.counts)
        return fold

    def _forget(self, task: OwnedTask, fold: Round) -> None:
        """Let the round forget remembered copies that every source has passed by the horizon and its
        margin, in stream time (``regions.core.forgetting``); a lagging source holds them all."""
        regions = {source.region for source in self._sources.values()}
        before = forget_before(task.store.sources(), regions, self._cfg.dedupe_retention_ms)
        if before is not None and should_forget(before, task.store.complete_since_ms(), FORGET_STEP_MS):
            fold.forget(task.store.oldest_seen(before, FORGET_BATCH), before)


async def send_batched(producer: AIOKafkaProducer, partition: int, out: list[Output]) -> dict[str, int]:
    """Send ``out`` to ``partition`` of each topic, one record batch per topic (a batch costs far less
    than a send per record); returns each topic's offset after its last record."""
    by_topic: dict[str, list[tuple[bytes, bytes | None]]] = {}
    for topic, key, value in out:
        by_topic.setdefault(topic, []).append((key, value))
    sent: list[tuple[str, int, asyncio.Future[RecordMetadata]]] = []
    for topic, records in by_topic.items():
        batch, count = producer.create_batch(), 0
        for key, value in records:
            if batch.append(key=key, value=value, timestamp=None) is None:  # full: send it, start another
                sent.append((topic, count, await producer.send_batch(batch, topic, partition=partition)))
                batch, count = producer.create_batch(), 0
                batch.append(key=key, value=value, timestamp=None)
            count += 1
        sent.append((topic, count, await producer.send_batch(batch, topic, partition=partition)))
    ends: dict[str, int] = {}
    for topic, count, future in sent:
        base = (await future).offset  # a batch's metadata names its first record
        ends[topic] = max(ends.get(topic, 0), base + count)
    return ends
