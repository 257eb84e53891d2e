"""The home region's lifecycle worker writing recorded moderation actions into the awards topic.

Each action of a board homed here that is recorded but not yet written becomes one moderation record
(``schema.moderation``) in the awards partition of the player's key, in sequence order; then the
board's ``written_through`` moves past them. A crash in between writes them again: the processors
apply an action only when it is newer than the player's last one, so a repeat changes nothing.

Which result versions an action claims is decided by where its record landed, never by clocks: once
the record is in the awards topic the worker reads the board's status, and unless it is still OPEN
the record may be after the close's cutoff (the home region writes its cutoff markers only after the
close began), so the action claims the board's next result version; a board still OPEN then closes
after it, and the close's result holds the action. Likewise every period the record names that was
OPEN before the record was sent and is not any more gets a version. On a windowed board the record
also names the closing and closed periods the action republishes
(``regions.lifecycle.moderated_periods``, whose versions are claimed first). Where the record landed
is recorded with each claim, before ``written_through`` moves (a crash writes it again and records
where the copy landed), so a version waits for the home projection to pass the record.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from aiokafka import AIOKafkaProducer

from regions.actions.correct import claim_version
from regions.actions.moderate import version_of
from regions.core.boards import Board, BoardStatus
from regions.core.lifecycle import position_name
from regions.core.moderation import state_boards
from regions.lifecycle.moderated_periods import PeriodStores, claim_periods, open_periods
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
) -> bool:
    """Write every recorded action of the boards homed in ``region`` that is not in ``topic`` yet;
    whether there were any."""
    moderation = stores.moderation
    pending = False
    for progress in await moderation.progress():
        if not progress.pending:
            continue
        record = await lifecycle.record(progress.board_id)
        if record is None or record.board.home_region != region:
            continue
        pending = True
        entries = await moderation.page(progress.board_id, progress.written_through, BATCH)
        board = record.board
        for entry in entries:  # one after another: a board's actions land in sequence order
            await _write_action(lifecycle, stores, projection, producer, board, entry,
                                topic=topic, partitions=partitions, region=region)  # fmt: skip
        if entries:
            await moderation.record_written(board.id, entries[-1].sequence)
            log.info("%s: moderation actions %d..%d written to %s", board.id, entries[0].sequence,
                     entries[-1].sequence, topic)  # fmt: skip
    return pending


async def _write_action(
    lifecycle: CassandraLifecycle, stores: PeriodStores, projection: RedisProjection, producer: AIOKafkaProducer,
    board: Board, entry: ModerationEntry, *, topic: str, partitions: list[int], region: str,
) -> None:  # fmt: skip
    """Write one action's record, then claim the versions of the boards whose cutoff it may follow
    and record, with every claim, where it landed."""
    periods = await claim_periods(stores, projection, board, entry)
    value = moderation_record(entry, board, region, periods)
    still_open = await open_periods(stores.periods, [b for b in value.boards if b not in periods])
    partition = partition_of_key(totals_key(board.id, entry.user_id), partitions)
    sent = await producer.send_and_wait(topic, encode_moderation(value), key=moderation_key(board.id, entry.user_id),
                                        partition=partition)  # fmt: skip
    now_open = await open_periods(stores.periods, still_open)
    late = [p for p in still_open if p not in now_open]
    closing = await lifecycle.record(board.id)
    if closing is not None and closing.board.status is not BoardStatus.OPEN:
        late.append(board.id)
    for board_id in late:
        await claim_version(stores.corrections, version_of(entry, board_id), datetime.now(UTC))
    for board_id in periods + late:
        await stores.corrections.record_written(board_id, f"moderation:{entry.sequence}",
                                                {position_name(region, partition): sent.offset})  # fmt: skip


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
