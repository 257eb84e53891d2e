"""Rebuilding the projection from the compacted totals topic, into fresh keys, swapped atomically.

1. Replay the totals topic from the beginning into a new generation of keys (live keys untouched).
2. Swap each board's keys in one MULTI (both keys share the board's hash tag).
3. Re-apply the tail the live projector may have applied to the old keys while step 1 ran: from the
   replay's end offsets to the current end. Versions make this idempotent.
4. Advance the positions to what the rebuilt keys now cover.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from aiokafka import ConsumerRecord, TopicPartition

from regions.kafka_clients import partitions_of, replay
from regions.projector.loop import TotalsBatch
from regions.redis_projection import RedisProjection
from regions.settings import Settings
from schema.records import Codec
from schema.redis_keys import board_keys


@dataclass(frozen=True, slots=True)
class RebuildReport:
    boards: list[str]
    records: int


async def _partitions(settings: Settings) -> list[TopicPartition]:
    topic = settings.kafka.topic("totals")
    return [TopicPartition(topic, p) for p in await partitions_of(settings.kafka, topic)]


async def rebuild(
    settings: Settings,
    projection: RedisProjection,
    only_board: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> RebuildReport:
    """Rebuild one board (``only_board``) or every board of the projection."""
    prefix, codec, generation = settings.redis.key_prefix, Codec(), uuid.uuid4().hex[:12]
    boards: set[str] = set()
    totals = TotalsBatch()  # positions covered, across the whole replay

    def keep(batch: TotalsBatch) -> None:
        if only_board is not None:
            batch.latest = {k: v for k, v in batch.latest.items() if k[0] == only_board}
        totals.marks.update({p: max(o, totals.marks.get(p, -1)) for p, o in batch.marks.items()})
        totals.newest_accepted_ms = max(totals.newest_accepted_ms, batch.newest_accepted_ms)

    async def into(generation_name: str, records: list[ConsumerRecord]) -> None:
        batch = TotalsBatch()
        batch.add(codec, records)
        keep(batch)
        work = batch.by_board(prefix, generation_name)
        boards.update(b for b, _, _ in work)
        if work:
            await projection.apply_many([(keys, t) for _, keys, t in work])

    tps = await _partitions(settings)
    end = await replay(settings.kafka, tps, lambda rs: into(generation, rs), progress=progress)
    await _swap(projection, prefix, generation, sorted(boards))
    await replay(settings.kafka, tps, lambda rs: into("", rs), start=end)
    if only_board is None:
        # Positions are shared by all boards: only a whole rebuild may claim them.
        epoch = (await projection.positions()).epoch
        if epoch is None:
            epoch = uuid.uuid4().hex
            await projection.start_epoch(epoch)
        await projection.advance(epoch, totals.newest_accepted_ms, totals.marks)
    return RebuildReport(sorted(boards), sum(end.values()))


async def _swap(projection: RedisProjection, prefix: str, generation: str, boards: list[str]) -> None:
    for board in boards:
        fresh, live = board_keys(prefix, board, generation), board_keys(prefix, board)
        async with projection.redis.pipeline(transaction=True) as tx:
            tx.rename(fresh.ranking, live.ranking)
            tx.rename(fresh.records, live.records)
            await tx.execute()
