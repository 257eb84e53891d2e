"""Archiving a closed board's final standings from its (frozen) home projection into Cassandra.

The chunks are a pure function of the projection, which no longer changes once every cutoff is
reached; so an archive interrupted by a crash is written again from the start with the same chunks,
and its header, written last, makes the version readable exactly once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

from regions.cassandra_results import CassandraResults, ResultHeader
from regions.core.boards import Board, TiePolicy
from regions.core.ordering import REACHED_WIDTH, user_of
from regions.core.reads import member_strip
from regions.core.results import chunk_count
from regions.redis_connection import ProjectionRedis
from regions.redis_reads import window_of
from schema.lifecycle import ResultChunk
from schema.redis_keys import board_keys
from schema.resources import lua_script

WRITES_IN_FLIGHT = 8  # chunks read from Redis and written to Cassandra at once


@dataclass(frozen=True, slots=True)
class Archived:
    header: ResultHeader
    chunks_written: int  # 0 when the version was complete already


class _Reader:
    """Slices of a board's projection in rank order, each read atomically by the projection's script."""

    def __init__(self, redis: ProjectionRedis, prefix: str, board: Board) -> None:
        keys = board_keys(prefix, board.id)
        self._keys, self._board = [keys.ranking, keys.records], board
        self._script = redis.register_script(lua_script("read_window"))

    async def chunk(self, number: int, size: int) -> ResultChunk:
        board, start = self._board, number * size
        window = window_of(
            await self._script(keys=self._keys, args=["slice", start, size, member_strip(board)])
        )
        rows = [] if window is None else window.rows
        entries = []
        for member, record in rows:
            if record is None:
                raise RuntimeError(f"{board.id}: {member} is ranked but has no record in the projection")
            version, total, _ = record.split("|", 2)
            reached = member[:REACHED_WIDTH] if board.tie_policy is TiePolicy.FIRST_REACHED else ""
            entries.append((user_of(board.tie_policy, member), int(total), int(version), reached))
        return ResultChunk(first_rank=start + 1, entries=entries)


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
    players = await redis.zcard(board_keys(prefix, board.id).ranking)
    count = chunk_count(players, chunk_size)
    reader, entries = _Reader(redis, prefix, board), 0
    for first in range(0, count, WRITES_IN_FLIGHT):
        numbers = range(first, min(first + WRITES_IN_FLIGHT, count))
        read = await asyncio.gather(*(reader.chunk(n, chunk_size) for n in numbers))
        chunks = list(zip(numbers, read, strict=True))
        entries += sum(len(chunk.entries) for _, chunk in chunks)
        await results.put_chunks(board.id, version, chunks)
        if pause_s:
            await asyncio.sleep(pause_s)  # a fault for tests (lifecycle.fault_chunk_pause_ms)
    if entries != players:  # the projection changed under the archive: it was not final
        raise RuntimeError(f"{board.id}: the projection held {players} players, then {entries} were read")
    header = ResultHeader(board.id, version, created_at, reason, players, count, chunk_size)
    await results.put_header(header)
    return Archived(header, count)
