"""Archiving a closed board's final standings from its (frozen) home projection into Cassandra.

The chunks are a pure function of the projection, which no longer changes once every cutoff is
reached; so an archive interrupted by a crash is written again from the start with the same chunks,
and its header, written last, makes the version readable exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import cast

from redis.asyncio import Redis

from regions.cassandra_results import CassandraResults, ResultHeader
from regions.core.boards import Board, TiePolicy
from regions.core.ordering import REACHED_WIDTH, total_of, user_of
from regions.core.results import chunk_count
from schema.lifecycle import ResultChunk
from schema.redis_keys import board_keys

WRITES_IN_FLIGHT = 8  # chunks read from Redis and written to Cassandra at once


@dataclass(frozen=True, slots=True)
class Archived:
    header: ResultHeader
    chunks_written: int  # 0 when the version was complete already


async def _read_chunk(redis: Redis, prefix: str, board: Board, number: int, size: int) -> ResultChunk:
    keys = board_keys(prefix, board.id)
    start = number * size
    ranked = cast(
        list[tuple[str, float]], await redis.zrange(keys.ranking, start, start + size - 1, withscores=True)
    )
    users = [user_of(board.tie_policy, member) for member, _ in ranked]
    records = cast(list[str | None], await redis.hmget(keys.records, users)) if users else []
    entries = []
    for (member, score), user, record in zip(ranked, users, records, strict=True):
        if record is None:
            raise RuntimeError(f"{board.id}: {user} is ranked but has no record in the projection")
        reached = member[:REACHED_WIDTH] if board.tie_policy is TiePolicy.FIRST_REACHED else ""
        entries.append((user, total_of(board.sort_order, score), int(record.split("|", 1)[0]), reached))
    return ResultChunk(first_rank=start + 1, entries=entries)


async def archive_projection(
    redis: Redis,
    prefix: str,
    results: CassandraResults,
    board: Board,
    *,
    version: int,
    reason: str | None,
    chunk_size: int,
    created_at: datetime,
) -> Archived:
    """Write the board's projection as result ``version`` (once complete, it is left as it is)."""
    done = await results.get(board.id, version)
    if done is not None:
        return Archived(done, 0)
    players = await redis.zcard(board_keys(prefix, board.id).ranking)
    count = chunk_count(players, chunk_size)
    entries = 0
    for first in range(0, count, WRITES_IN_FLIGHT):
        numbers = range(first, min(first + WRITES_IN_FLIGHT, count))
        chunks = [(n, await _read_chunk(redis, prefix, board, n, chunk_size)) for n in numbers]
        entries += sum(len(chunk.entries) for _, chunk in chunks)
        await results.put_chunks(board.id, version, chunks)
    if entries != players:  # the projection changed under the archive: it was not final
        raise RuntimeError(f"{board.id}: the projection held {players} players, then {entries} were read")
    header = ResultHeader(board.id, version, created_at, reason, players, count, chunk_size)
    await results.put_header(header)
    return Archived(header, count)
