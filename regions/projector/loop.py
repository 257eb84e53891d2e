"""The projector: totals (read_committed) into the Redis projection, versioned and idempotent.

Replays, redelivery and duplicates are harmless: the Lua script applies a total only when its
version is newer. Positions (asOf) advance only after the totals before them are applied. When
Redis loses the projection (its epoch is gone), the projector starts a new epoch and replays the
compacted totals topic from the beginning.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from regions.core.boards import SortOrder, TiePolicy
from regions.core.ordering import encode
from regions.health import Health
from regions.kafka_clients import assign_from_committed, consumer_lag, make_consumer, partitions_of
from regions.redis_projection import ProjectedTotal, RedisProjection
from regions.settings import Settings
from schema.records import Codec, ProjectedView, Watermark, decoded
from schema.redis_keys import BoardKeys, board_keys

log = logging.getLogger(__name__)
MAX_HINT_USERS = 64


@dataclass(slots=True)
class TotalsBatch:
    """A batch of the totals topic reduced to what the projection needs."""

    latest: dict[tuple[str, str], ProjectedView] = field(default_factory=dict)
    marks: dict[int, int] = field(default_factory=dict)
    newest_accepted_ms: int = 0

    def add(self, codec: Codec, records: Sequence[ConsumerRecord]) -> None:
        for record in records:
            value = decoded(
                codec.projected, record.value, f"{record.topic}:{record.partition}:{record.offset}"
            )
            if value is None:
                continue
            if isinstance(value, Watermark):
                mark = self.marks.get(value.source_partition, -1)
                self.marks[value.source_partition] = max(mark, value.source_offset)
                self.newest_accepted_ms = max(self.newest_accepted_ms, value.accepted_at_ms)
                continue
            key = (value.board_id, value.user_id)
            known = self.latest.get(key)
            if known is None or value.version > known.version:
                self.latest[key] = value

    def by_board(
        self, prefix: str, generation: str = ""
    ) -> list[tuple[str, BoardKeys, list[ProjectedTotal]]]:
        boards: dict[str, list[ProjectedTotal]] = {}
        for t in self.latest.values():
            score, member = encode(
                SortOrder(t.sort_order), TiePolicy(t.tie_policy), t.user_id, t.total, t.reached
            )
            boards.setdefault(t.board_id, []).append(
                ProjectedTotal(t.user_id, t.version, t.total, score, member)
            )
        return [(b, board_keys(prefix, b, generation), totals) for b, totals in boards.items()]


class Projector:
    def __init__(self, settings: Settings, projection: RedisProjection, health: Health) -> None:
        self._settings = settings
        self._kafka = settings.kafka
        self._projection = projection
        self._health = health
        self._prefix = settings.redis.key_prefix
        self._group = f"{self._kafka.topic_prefix}.projector.{settings.region}"
        self._codec = Codec()
        self._hint = msgspec.json.Encoder().encode
        self.running = asyncio.Event()

    async def _new_epoch(self, consumer: AIOKafkaConsumer, tps: list[TopicPartition]) -> str:
        epoch = uuid.uuid4().hex
        log.warning("projection has no epoch (new or lost Redis data): replaying totals from the beginning")
        await self._projection.start_epoch(epoch)
        await consumer.seek_to_beginning(*tps)
        return epoch

    async def _publish_hints(
        self, batch: TotalsBatch, boards: list[str], sequences: list[int], users: list[list[str]]
    ) -> None:
        positions = {str(p): o for p, o in batch.marks.items()}
        for board_id, sequence, changed in zip(boards, sequences, users, strict=True):
            if not sequence:
                continue
            totals = [batch.latest[(board_id, u)] for u in changed[:MAX_HINT_USERS]]
            hint = {
                "boardId": board_id, "sequence": sequence, "positions": positions,
                "users": [{"userId": t.user_id, "score": t.total, "version": t.version} for t in totals],
                "truncated": len(changed) > MAX_HINT_USERS,
            }  # fmt: skip
            await self._projection.publish_hint(board_id, self._hint(hint))

    async def apply(self, epoch: str, batch: TotalsBatch) -> bool:
        """Apply a batch, publish hints, then advance positions; False when the epoch was lost."""
        work = batch.by_board(self._prefix)
        if work:
            results = await self._projection.apply_many([(keys, totals) for _, keys, totals in work])
            await self._publish_hints(
                batch, [b for b, _, _ in work], [r.sequence for r in results], [r.users for r in results]
            )
        if not batch.marks:
            return True
        return await self._projection.advance(epoch, batch.newest_accepted_ms, batch.marks)

    async def run(self, stop: asyncio.Event) -> None:
        consumer = make_consumer(self._kafka, group_id=self._group)
        await consumer.start()
        try:
            topic = self._kafka.topic("totals")
            tps = [TopicPartition(topic, p) for p in await partitions_of(self._kafka, topic)]
            await assign_from_committed(consumer, tps)
            epoch = (await self._projection.positions()).epoch or await self._new_epoch(consumer, tps)
            self.running.set()
            loop, next_lag = asyncio.get_running_loop(), 0.0
            while not stop.is_set():
                polled = await consumer.getmany(
                    *tps, timeout_ms=100, max_records=self._settings.projector.max_batch
                )
                if any(polled.values()):
                    batch = TotalsBatch()
                    for records in polled.values():
                        batch.add(self._codec, records)
                    if not await self.apply(epoch, batch):
                        epoch = await self._new_epoch(consumer, tps)
                        continue
                    await consumer.commit({tp: rs[-1].offset + 1 for tp, rs in polled.items() if rs})
                if loop.time() >= next_lag:
                    self._health.report_lag(topic, await consumer_lag(consumer, tps))
                    next_lag = loop.time() + 2
                    if (await self._projection.positions()).epoch != epoch:  # Redis lost data while idle
                        epoch = await self._new_epoch(consumer, tps)
        finally:
            self.running.clear()
            await consumer.stop()
