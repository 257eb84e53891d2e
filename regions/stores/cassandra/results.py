"""Archived results of closed boards in Cassandra: chunks of ranked entries and a header per version.

A version is written chunk by chunk (``board_result_chunks``, one partition per chunk, written by key:
writing a chunk again with the same entries is harmless), then its header (``board_results``, IF NOT
EXISTS). A version is readable only once its header exists, so a crash mid-archive leaves nothing
readable and the archive is simply written again. Archived versions are never changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from cassandra.cluster import Session

from regions.core.results import ResultEntry, TieStart
from regions.stores.cassandra.base import CassandraTable, Row, Statements
from schema.lifecycle import LifecycleCodec, ResultChunk

_HEADER_COLUMNS = "board_id, result_version, created_at, reason, player_count, chunk_count, chunk_size"


@dataclass(frozen=True, slots=True)
class ResultHeader:
    board_id: str
    version: int
    created_at: datetime | None
    reason: str | None
    player_count: int
    chunk_count: int
    chunk_size: int


def _header(row: Row) -> ResultHeader:
    return ResultHeader(
        row.board_id, row.result_version, row.created_at, row.reason,
        row.player_count or 0, row.chunk_count or 0, row.chunk_size or 1,
    )  # fmt: skip


class CassandraResults(CassandraTable):
    statements: ClassVar[Statements] = {
        # Rows of ``board_results`` written before chunked archives have no chunk count: not readable.
        "latest": f"SELECT {_HEADER_COLUMNS} FROM board_results WHERE board_id = ? LIMIT 1",
        "version": f"SELECT {_HEADER_COLUMNS} FROM board_results WHERE board_id = ? AND result_version = ?",
        "put_header": f"INSERT INTO board_results ({_HEADER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS",
        "put_chunk": "INSERT INTO board_result_chunks (board_id, result_version, chunk, ranked) VALUES (?, ?, ?, ?)",
        "get_chunk": (
            "SELECT chunk, ranked FROM board_result_chunks WHERE board_id = ? AND result_version = ? AND chunk = ?"
        ),
    }

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self._codec = LifecycleCodec()

    async def get(self, board_id: str, version: int | None) -> ResultHeader | None:
        """A complete version's header, or the newest one when ``version`` is None."""
        if version is None:
            return await self._one("latest", (board_id,), _header)
        return await self._one("version", (board_id, version), _header)

    async def put_chunks(self, board_id: str, version: int, chunks: list[tuple[int, ResultChunk]]) -> None:
        params = [(board_id, version, number, self._codec.encode(chunk)) for number, chunk in chunks]
        await self._every("put_chunk", params)

    async def put_header(self, header: ResultHeader) -> None:
        """Mark the version complete (once: a header already there is kept)."""
        await self._execute("put_header", (
            header.board_id, header.version, header.created_at, header.reason,
            header.player_count, header.chunk_count, header.chunk_size,
        ))  # fmt: skip

    async def chunks(
        self, board_id: str, version: int, numbers: Iterable[int]
    ) -> dict[int, list[ResultEntry]]:
        """The entries of the named chunks of a version, by chunk number."""
        found: dict[int, list[ResultEntry]] = {}
        for outcome in await self._each("get_chunk", [(board_id, version, number) for number in numbers]):
            if isinstance(outcome, BaseException):
                raise outcome
            row = outcome.one()
            if row is not None:
                chunk = self._codec.chunk(row.ranked)
                found[row.chunk] = [ResultEntry(*entry) for entry in chunk.entries]
        return found

    async def tie_start(
        self, header: ResultHeader, rank: int, score: int, known: dict[int, list[ResultEntry]]
    ) -> int:
        """The first rank of the tie of the entry at ``rank`` (``known``: chunks read already)."""
        search = TieStart(rank, score, header.chunk_size)
        while (number := search.probe()) is not None:
            if number not in known:
                known.update(await self.chunks(header.board_id, header.version, [number]))
            search.seen(number, known.get(number, []))
        return search.start
