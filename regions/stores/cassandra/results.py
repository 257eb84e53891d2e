"""Archived results of closed boards in Cassandra: chunks of ranked entries and a header per version.

A version is written chunk by chunk (``board_result_chunks``, one partition per chunk, written by key:
writing a chunk again with the same entries is harmless), then its header (``board_results``, IF NOT
EXISTS). A version is readable only once its header exists, so a crash mid-archive leaves nothing
readable and the archive is simply written again. Archived versions are never changed, except to
erase a player (``rewrite``).

Every chunk's players are written into ``archived_players`` with it (one single-partition batch per
chunk), and a version's header says so (``players_indexed``): ``archives_of`` then finds the chunks
holding a player by its index, without reading any chunk.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from cassandra.cluster import Session
from cassandra.query import BatchStatement, BatchType

from regions.core.erasure import in_chunks
from regions.core.results import ResultEntry, TieStart, chunk_count
from regions.stores.cassandra.base import CassandraTable, Row, Statements
from regions.stores.cassandra.session import execute_each
from schema.lifecycle import LifecycleCodec, ResultChunk

_HEADER_COLUMNS = (
    "board_id, result_version, created_at, reason, player_count, chunk_count, chunk_size, players_indexed, "
    "error_bound"
)


@dataclass(frozen=True, slots=True)
class ResultHeader:
    board_id: str
    version: int
    created_at: datetime | None
    reason: str | None
    player_count: int
    chunk_count: int
    chunk_size: int
    players_indexed: bool = True  # its players are in archived_players (False: archived before it)
    # An approximate board's result: the most its estimates exceed the true counts, epsilon x the
    # board's counted total at the archive (None: an exact result, or one archived before it was kept)
    error_bound: int | None = None


@dataclass(frozen=True, slots=True)
class ArchivedChunk:
    """Where a player is (or was, before a rewrite moved it) in an archived result."""

    board_id: str
    version: int
    chunk: int


def _header(row: Row) -> ResultHeader:
    return ResultHeader(
        row.board_id, row.result_version, row.created_at, row.reason,
        row.player_count or 0, row.chunk_count or 0, row.chunk_size or 1, bool(row.players_indexed),
        row.error_bound,
    )  # fmt: skip


def result_chunk(first_rank: int, entries: list[ResultEntry]) -> ResultChunk:
    return ResultChunk(
        first_rank=first_rank,
        entries=[(e.user_id, e.score, e.version, e.reached) for e in entries],
        metadata={i: e.metadata for i, e in enumerate(entries) if e.metadata},
        verified={i: e.verified_count for i, e in enumerate(entries) if e.verified_count is not None},
    )


def result_chunks(entries: list[ResultEntry], size: int) -> list[tuple[int, ResultChunk]]:
    """A result's entries (in rank order) as its numbered chunks."""
    return [(n, result_chunk(n * size + 1, part)) for n, part in in_chunks(entries, size)]


class CassandraResults(CassandraTable):
    statements: ClassVar[Statements] = {
        # Rows of ``board_results`` written before chunked archives have no chunk count: not readable.
        "latest": f"SELECT {_HEADER_COLUMNS} FROM board_results WHERE board_id = ? LIMIT 1",
        "version": f"SELECT {_HEADER_COLUMNS} FROM board_results WHERE board_id = ? AND result_version = ?",
        "versions": f"SELECT {_HEADER_COLUMNS} FROM board_results WHERE board_id = ?",
        "put_header": f"INSERT INTO board_results ({_HEADER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS",
        "resize": (
            "UPDATE board_results SET player_count = ?, chunk_count = ?, players_indexed = true "
            "WHERE board_id = ? AND result_version = ?"
        ),
        "drop_chunk": "DELETE FROM board_result_chunks WHERE board_id = ? AND result_version = ? AND chunk = ?",
        "put_player": "INSERT INTO archived_players (board_id, result_version, chunk, user_id) VALUES (?, ?, ?, ?)",
        "archives_of": "SELECT board_id, result_version, chunk FROM archived_players WHERE user_id = ?",
        "forget": (
            "DELETE FROM archived_players WHERE board_id = ? AND result_version = ? AND chunk = ? AND user_id = ?"
        ),
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

    async def versions(self, board_id: str) -> list[ResultHeader]:
        """Every complete version of the board, newest first."""
        return await self._rows("versions", (board_id,), _header)

    async def put_chunks(self, board_id: str, version: int, chunks: list[tuple[int, ResultChunk]]) -> None:
        """Write the chunks, and their players into ``archived_players``."""
        params = [(board_id, version, number, self._codec.encode(chunk)) for number, chunk in chunks]
        await self._every("put_chunk", params)
        await self.index_players(board_id, version, chunks)

    async def index_players(self, board_id: str, version: int, chunks: list[tuple[int, ResultChunk]]) -> None:
        """Record which players each chunk holds: one single-partition batch per chunk."""
        batches = []
        for number, chunk in chunks:
            if not chunk.entries:
                continue
            batch = BatchStatement(batch_type=BatchType.UNLOGGED)
            for user_id, *_ in chunk.entries:
                batch.add(self._statement("put_player"), (board_id, version, number, user_id))
            batches.append((batch, None))
        for outcome in await execute_each(self._session, batches):
            if isinstance(outcome, BaseException):
                raise outcome

    async def put_header(self, header: ResultHeader) -> None:
        """Mark the version complete (once: a header already there is kept)."""
        await self._execute("put_header", (
            header.board_id, header.version, header.created_at, header.reason,
            header.player_count, header.chunk_count, header.chunk_size, header.players_indexed,
            header.error_bound,
        ))  # fmt: skip

    async def all_entries(self, header: ResultHeader) -> list[ResultEntry]:
        """Every entry of a version in rank order, with the chunk past its last (an interrupted
        rewrite that shrank it may have left one)."""
        found = await self.chunks(header.board_id, header.version, range(header.chunk_count + 1))
        return [entry for number in sorted(found) for entry in found[number]]

    async def rewrite(self, header: ResultHeader, entries: list[ResultEntry]) -> int:
        """Replace a version's entries with ``entries`` (a player erased, the others closed up, in the
        same chunk size): its chunks, then its header's counts, then the chunks past the new last.
        Repeating it after a crash writes the same again. Returns the chunks written."""
        size, count = header.chunk_size, chunk_count(len(entries), header.chunk_size)
        chunks = result_chunks(entries, size)
        await self.put_chunks(header.board_id, header.version, chunks)
        await self._execute("resize", (len(entries), count, header.board_id, header.version))
        stale = range(count, max(header.chunk_count, count) + 1)
        await self._every("drop_chunk", [(header.board_id, header.version, n) for n in stale])
        return count

    async def archives_of(self, user_id: str) -> list[ArchivedChunk]:
        """The indexed chunks recorded as holding the player (by the index on user_id)."""
        rows = await self._execute("archives_of", (user_id,))
        return [ArchivedChunk(r.board_id, r.result_version, r.chunk) for r in rows]

    async def forget(self, user_id: str, where: list[ArchivedChunk]) -> None:
        """Remove the player's rows from ``archived_players``."""
        await self._every("forget", [(w.board_id, w.version, w.chunk, user_id) for w in where])

    async def unindexed(self) -> list[ResultHeader]:
        """Every version archived before its players were indexed (a scan of the headers, one row
        per version: never of the chunks)."""
        rows = await self._query(f"SELECT {_HEADER_COLUMNS} FROM board_results")
        return [h for h in map(_header, rows) if not h.players_indexed and h.chunk_count]

    async def mark_indexed(self, header: ResultHeader, entries: list[ResultEntry]) -> None:
        """Index an older version's players (read by ``all_entries``) and say so on its header."""
        chunks = result_chunks(entries, header.chunk_size)
        await self.index_players(header.board_id, header.version, chunks)
        counts = (header.player_count, header.chunk_count)
        await self._execute("resize", (*counts, header.board_id, header.version))

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
                found[row.chunk] = [
                    ResultEntry(*entry, metadata=chunk.metadata.get(i, ""), verified_count=chunk.verified.get(i))
                    for i, entry in enumerate(chunk.entries)
                ]
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
