"""The home region's lifecycle worker writing recorded moderation actions into the awards topic.

Each action of a board homed here that is recorded but not yet written becomes one moderation record
(``schema.moderation``) in the awards partition of the player's key, in sequence order; then the
board's ``written_through`` moves past them. A crash in between writes them again: the processors
apply an action only when it is newer than the player's last one, so a repeat changes nothing.

On a windowed board the record also names the closing and closed periods the action republishes
(``regions.lifecycle.moderated_periods``, whose versions are claimed first); where it landed is
recorded with each claim, so a period's version waits for the projection to pass the record.
"""

from __future__ import annotations

import logging

from aiokafka import AIOKafkaProducer

from regions.core.boards import Board
from regions.core.lifecycle import position_name
from regions.core.moderation import state_boards
from regions.lifecycle.moderated_periods import PeriodStores, claim_periods
from regions.stores.cassandra.base import ms
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.moderation import ModerationEntry
from regions.stores.kafka.clients import partition_of_key
from regions.stores.redis.projection import RedisProjection
from schema.moderation import ModerationRecord, encode_moderation, moderation_key
from schema.records import totals_key

log = logging.getLogger(__name__)
BATCH = 500  # actions written per board per pass


async def write_moderation(
    lifecycle: CassandraLifecycle,
    stores: PeriodStores,
    projection: RedisProjection,
    producer: AIOKafkaProducer,
    *,
    topic: str,
    partitions: list[int],
    region: str,
) -> None:
    """Write every recorded action of the boards homed in ``region`` that is not in ``topic`` yet."""
    moderation = stores.moderation
    for progress in await moderation.progress():
        if not progress.pending:
            continue
        record = await lifecycle.record(progress.board_id)
        if record is None or record.board.home_region != region:
            continue
        entries = await moderation.page(progress.board_id, progress.written_through, BATCH)
        board = record.board
        for entry in entries:  # one after another: a board's actions land in sequence order
            periods = await claim_periods(stores, projection, board, entry)
            partition = partition_of_key(totals_key(board.id, entry.user_id), partitions)
            sent = await producer.send_and_wait(
                topic, encode_moderation(moderation_record(entry, board, region, periods)),
                key=moderation_key(board.id, entry.user_id), partition=partition,
            )  # fmt: skip
            for period in periods:
                await stores.corrections.record_written(period, f"moderation:{entry.sequence}",
                                                        {position_name(region, partition): sent.offset})  # fmt: skip
        if entries:
            await moderation.record_written(board.id, entries[-1].sequence)
            log.info("%s: moderation actions %d..%d written to %s", board.id, entries[0].sequence,
                     entries[-1].sequence, topic)  # fmt: skip


def moderation_record(
    entry: ModerationEntry, board: Board, region: str, periods: list[str] | None = None
) -> ModerationRecord:
    """The record of ``entry``, with the board's rules and the states it changes: at its time, and
    the closed ``periods`` it republishes."""
    at_ms = ms(entry.at) or 0
    spec = board.window_spec
    states = state_boards(board.id, spec, at_ms)
    states += [p for p in periods or () if p not in states]
    return ModerationRecord(
        board_id=board.id, user_id=entry.user_id, sequence=entry.sequence, hidden=entry.hidden, region=region,
        at_ms=at_ms, boards=states, sort_order=board.sort_order.value,
        tie_policy=board.tie_policy.value, shards=board.shards, rolling=spec is not None and spec.rolling,
    )  # fmt: skip
