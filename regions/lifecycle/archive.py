"""Archiving a closed board's final standings from its (frozen) home projection into Cassandra.

The chunks are a pure function of the projection, which no longer changes once every cutoff is
reached; so an archive interrupted by a crash is written again from the start with the same chunks,
and its header, written last, makes the version readable exactly once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

from regions.core.boards import Board, TiePolicy
from regions.core.ordering import REACHED_WIDTH
from regions.core.reads import Row, entry_of
from regions.core.results import chunk_count
from regions.stores.cassandra.results import CassandraResults, ResultHeader
from regions.stores.redis.connection import ProjectionRedis
from regions.stores.redis.projection import RedisProjection
from regions.stores.redis.reads import RankReader
from schema.lifecycle import ResultChunk

WRITES_IN_FLIGHT = 8  # chunks written to Cassandra at once


@dataclass(frozen=True, slots=True)
class Archived:
    header: ResultHeader
    chunks_written: int  # 0 when the version was complete already


def _chunk(board: Board, first_rank: int, rows: list[Row]) -> ResultChunk:
    entries, metadata = [], {}
    for i, row in enumerate(rows):
        entry = entry_of(board, first_rank + i, row)  # BrokenProjection when a record is missing
        reached = row[0][:REACHED_WIDTH] if board.tie_policy is TiePolicy.FIRST_REACHED else ""
        entries.append((entry.user_id, entry.score, entry.version, reached))
        if entry.metadata:
            metadata[i] = entry.metadata
    return ResultChunk(first_rank=first_rank, entries=entries, metadata=metadata)


async def archive_projection(
    redis: ProjectionRedis,
    prefix: str,
    results: CassandraResults,
    board: Board,
    *,
    version: int,
    reason: str | None,
    chunk_size: int,
    created_at: datetime,
    pause_s: float = 0.0,
) -> Archived:
    """Write the board's projection as result ``version`` (once complete, it is left as it is)."""
    done = await results.get(board.id, version)
    if done is not None:
        return Archived(done, 0)
    projection = RedisProjection(redis, prefix)
    players = await projection.count(board.id)
    count = chunk_count(players, chunk_size)
    reader, entries, pending = RankReader(projection, prefix, ""), 0, []
    async for rows in reader.ranked_rows(board, chunk_size):
        pending.append((entries // chunk_size, _chunk(board, entries + 1, rows)))
        entries += len(rows)
        if len(pending) == WRITES_IN_FLIGHT:
            await results.put_chunks(board.id, version, pending)
            pending = []
            if pause_s:
                await asyncio.sleep(pause_s)  # a fault for tests (lifecycle.fault_chunk_pause_ms)
    if pending:
        await results.put_chunks(board.id, version, pending)
    if entries != players:  # the projection changed under the archive: it was not final
        raise RuntimeError(f"{board.id}: the projection held {players} players, then {entries} were read")
    header = ResultHeader(board.id, version, created_at, reason, players, count, chunk_size)
    await results.put_header(header)
    return Archived(header, count)
