"""Corrections of closed boards in Cassandra (``board_corrections``): what each correction asked for,
the result version it publishes, where its records landed and when it was published.

A correction is recorded by one lightweight transaction in its board's partition that claims the next
result version as it writes the row (``IF last_version = <read> AND result_version = null``): an id
is recorded once, two corrections never share a version, and a lost race is simply read again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar

from regions.core.corrections import Adjustment, CorrectionRequest, content_digest
from regions.stores.cassandra.base import CassandraTable, Row, Statements

_COLUMNS = (
    "board_id, correction_id, result_version, reason, adjustments, digest, created_at, written, published_at, "
    "moderated"
)


@dataclass(frozen=True, slots=True)
class CorrectionEntry:
    board_id: str
    correction_id: str
    result_version: int
    reason: str
    adjustments: tuple[Adjustment, ...]
    digest: str
    created_at: datetime | None
    written: Mapping[str, int] | None = field(default=None)  # None: its records are not written yet
    published_at: datetime | None = None
    moderated: tuple[tuple[str, bool], ...] = ()  # a moderation action's: user -> hidden

    @property
    def published(self) -> bool:
        return self.published_at is not None


def _entry(row: Row) -> CorrectionEntry | None:
    """The correction a row holds; None for a row without a result version (no correction recorded)."""
    if row.result_version is None:
        return None
    return CorrectionEntry(
        board_id=row.board_id, correction_id=row.correction_id, result_version=row.result_version,
        reason=row.reason, adjustments=tuple(Adjustment(u, s) for u, s in row.adjustments or ()),
        digest=row.digest, created_at=row.created_at,
        written=None if row.written is None else dict(row.written), published_at=row.published_at,
        moderated=tuple(sorted((row.moderated or {}).items())),
    )  # fmt: skip


class CassandraCorrections(CassandraTable):
    statements: ClassVar[Statements] = {
        "get": f"SELECT {_COLUMNS} FROM board_corrections WHERE board_id = ? AND correction_id = ?",
        "of_board": f"SELECT {_COLUMNS} FROM board_corrections WHERE board_id = ?",
        "last": "SELECT last_version FROM board_corrections WHERE board_id = ? LIMIT 1",
        "record": (
            "UPDATE board_corrections SET last_version = ?, result_version = ?, reason = ?, adjustments = ?, "
            "digest = ?, created_at = ?, moderated = ? WHERE board_id = ? AND correction_id = ? "
            "IF last_version = ? AND result_version = null"
        ),
        "written": "UPDATE board_corrections SET written = ? WHERE board_id = ? AND correction_id = ?",
        "published": "UPDATE board_corrections SET published_at = ? WHERE board_id = ? AND correction_id = ?",
        "rewrite": (
            "UPDATE board_corrections SET adjustments = ?, digest = ? WHERE board_id = ? AND correction_id = ?"
        ),
    }

    async def get(self, board_id: str, correction_id: str) -> CorrectionEntry | None:
        return await self._one("get", (board_id, correction_id), _entry)

    async def of_board(self, board_id: str) -> list[CorrectionEntry]:
        """Every correction of the board, by result version."""
        entries = await self._rows("of_board", (board_id,), _entry)
        return sorted((e for e in entries if e is not None), key=lambda e: e.result_version)

    async def last_version(self, board_id: str) -> int | None:
        """The newest result version assigned to a correction of the board (None: none yet)."""
        return await self._one("last", (board_id,), lambda row: row.last_version)

    async def last_versions(self) -> dict[str, int]:
        """The newest version assigned per corrected board (one row per board's partition)."""
        rows = await self._query("SELECT DISTINCT board_id, last_version FROM board_corrections")
        return {row.board_id: row.last_version for row in rows if row.last_version is not None}

    async def record(self, request: CorrectionRequest, version: int, after: int | None, at: datetime) -> bool:
        """Record ``request`` as result ``version``, if the board's last assigned version is still
        ``after`` and the id is new; False otherwise (nothing was written)."""
        adjustments = [(a.user_id, a.score) for a in request.adjustments]
        return await self._applied("record", (
            version, version, request.reason, adjustments, request.digest, at, dict(request.moderated) or None,
            request.board_id, request.correction_id, after,
        ))  # fmt: skip

    async def record_written(self, board_id: str, correction_id: str, written: Mapping[str, int]) -> None:
        """The correction's records are in the awards topic: the last one of each partition is here."""
        await self._execute("written", (dict(written), board_id, correction_id))

    async def record_published(self, board_id: str, correction_id: str, at: datetime) -> None:
        await self._execute("published", (at, board_id, correction_id))

    async def erase_player(self, board_id: str, user_id: str) -> int:
        """Take the player out of the adjustments of the board's published corrections (an erased
        player; their digest follows); how many corrections changed."""
        changed = [e for e in await self.of_board(board_id) if e.published and _adjusts(e, user_id)]
        params = []
        for entry in changed:
            kept = [a for a in entry.adjustments if a.user_id != user_id]
            digest = content_digest(entry.reason, kept)
            params.append(([(a.user_id, a.score) for a in kept], digest, board_id, entry.correction_id))
        await self._every("rewrite", params)
        return len(changed)


def _adjusts(entry: CorrectionEntry, user_id: str) -> bool:
    return any(a.user_id == user_id for a in entry.adjustments)
