"""Archiving a closed board's final standings from its (frozen) home projection into Cassandra.

The chunks are a pure function of the projection, which no longer changes once every cutoff is
reached; so an archive interrupted by a crash is written again from the start with the same chunks,
and its header, written last, makes the version readable exactly once.

An approximate (trending) board's result is its final chart (``regions.core.results``): its best k
candidates with their estimates and verified counts, and the error bound of the estimates, from the
board's companion of partition totals in the same frozen projection.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

from regions.core.boards import Board
from regions.core.reads import Row, entry_of
from regions.core.results import archived_count, archived_entry, chunk_count
from regions.core.sketch import error_bound
from regions.stores.cassandra.results import CassandraResults, ResultHeader, result_chunk
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
    """The rows from ``first_rank`` on as a chunk; BrokenProjection when a record is missing."""
    return result_chunk(first_rank, [archived_entry(board, first_rank + i, row) for i, row in enumerate(rows)])


async def _error_bound(reader: RankReader, board: Board, chunk_size: int) -> int | None:
    """The error bound of an approximate board's estimates (None for an exact board): epsilon x the
    partitions' counted totals, its companion's entries."""
    if board.approximate is None:
        return None
    counted = 0
    async for rows in reader.ranked_rows(board.counts_board, chunk_size):
        counted += sum(entry_of(board.counts_board, 1, row).score for row in rows)
    return error_bound(board.approximate.epsilon, counted)


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
    ranked = await projection.count(board.id)
    players = archived_count(ranked, board.approximate)
    count = chunk_count(players, chunk_size)
    reader, entries, read, pending = RankReader(projection, prefix, ""), 0, 0, []
    bound = await _error_bound(reader, board, chunk_size)
    async for rows in reader.ranked_rows(board, chunk_size):
        read += len(rows)
        kept = rows[: players - entries]  # an approximate board's best k: the others are read, not kept
        if not kept:
            continue
        pending.append((entries // chunk_size, _chunk(board, entries + 1, kept)))
        entries += len(kept)
        if len(pending) == WRITES_IN_FLIGHT:
            await results.put_chunks(board.id, version, pending)
            pending = []
            if pause_s:
                await asyncio.sleep(pause_s)  # a fault for tests (lifecycle.fault_chunk_pause_ms)
    if pending:
        await results.put_chunks(board.id, version, pending)
    if read != ranked:  # the projection changed under the archive: it was not final
        raise RuntimeError(f"{board.id}: the projection held {ranked} players, then {read} were read")
    header = ResultHeader(board.id, version, created_at, reason, players, count, chunk_size, error_bound=bound)
    await results.put_header(header)
    return Archived(header, count)
