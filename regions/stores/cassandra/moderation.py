"""Moderation of boards in Cassandra (``board_moderation``): the log of every action on a board, by
sequence, and how far its records are written into the home region's awards topic.

An action is recorded by one lightweight transaction in its board's partition that claims the next
sequence as it writes the row (``IF last_sequence = <read> AND user_id = null``): two actions never
share a sequence, and a lost race is simply read again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from regions.core.moderation import HIDE, ModerationRequest
from regions.stores.cassandra.base import CassandraTable, Row, Statements

_COLUMNS = "board_id, sequence, user_id, action, reason, at"


@dataclass(frozen=True, slots=True)
class ModerationEntry:
    board_id: str
    sequence: int
    user_id: str
    action: str  # regions.core.moderation.HIDE or RESTORE
    reason: str
    at: datetime

    @property
    def hidden(self) -> bool:
        return self.action == HIDE


@dataclass(frozen=True, slots=True)
class ModerationProgress:
    """A board's newest assigned sequence and the newest one written into the awards topic."""

    board_id: str
    last_sequence: int
    written_through: int

    @property
    def pending(self) -> bool:
        return self.last_sequence > self.written_through


def _entry(row: Row) -> ModerationEntry | None:
    if row.sequence is None or row.user_id is None:
        return None  # the partition's static columns only
    return ModerationEntry(row.board_id, row.sequence, row.user_id, row.action, row.reason, row.at)


class CassandraModeration(CassandraTable):
    statements: ClassVar[Statements] = {
        "last": "SELECT last_sequence FROM board_moderation WHERE board_id = ? LIMIT 1",
        "record": (
            "UPDATE board_moderation SET last_sequence = ?, user_id = ?, action = ?, reason = ?, at = ? "
            "WHERE board_id = ? AND sequence = ? IF last_sequence = ? AND user_id = null"
        ),
        "get": f"SELECT {_COLUMNS} FROM board_moderation WHERE board_id = ? AND sequence = ?",
        "after": f"SELECT {_COLUMNS} FROM board_moderation WHERE board_id = ? AND sequence > ? LIMIT ?",
        "all": f"SELECT {_COLUMNS} FROM board_moderation WHERE board_id = ?",
        "written": "UPDATE board_moderation SET written_through = ? WHERE board_id = ?",
        "delete": "DELETE FROM board_moderation WHERE board_id = ? AND sequence = ?",
    }

    async def last_sequence(self, board_id: str) -> int | None:
        return await self._one("last", (board_id,), lambda row: row.last_sequence)

    async def record(self, request: ModerationRequest, sequence: int, after: int | None, at: datetime) -> bool:
        """Record ``request`` as action ``sequence`` if the board's last sequence is still ``after``;
        False otherwise (nothing was written)."""
        return await self._applied("record", (
            sequence, request.user_id, request.action, request.reason, at, request.board_id, sequence, after,
        ))  # fmt: skip

    async def get(self, board_id: str, sequence: int) -> ModerationEntry | None:
        return await self._one("get", (board_id, sequence), _entry)

    async def page(self, board_id: str, after: int, limit: int) -> list[ModerationEntry]:
        """Up to ``limit`` actions of the board after sequence ``after``, oldest first."""
        entries = await self._rows("after", (board_id, after, limit), _entry)
        return [e for e in entries if e is not None]

    async def last_of(self, board_id: str, user_id: str, before: int | None = None) -> ModerationEntry | None:
        """The player's newest action on the board (before sequence ``before``, if given; None: never
        moderated there)."""
        entries = await self._rows("all", (board_id,), _entry)
        return max((e for e in entries if e is not None and e.user_id == user_id
                    and (before is None or e.sequence < before)),
                   key=lambda e: e.sequence, default=None)  # fmt: skip

    async def progress(self) -> list[ModerationProgress]:
        """Every moderated board's newest sequence and how far its records are written."""
        rows = await self._query("SELECT DISTINCT board_id, last_sequence, written_through FROM board_moderation")
        return [ModerationProgress(row.board_id, row.last_sequence, row.written_through or 0)
                for row in rows if row.last_sequence is not None]  # fmt: skip

    async def erase_user(self, user_id: str) -> int:
        """Delete the player's actions from every board's log (an erasure); how many there were."""
        found = []
        for progress in await self.progress():
            entries = await self._rows("all", (progress.board_id,), _entry)
            found += [(e.board_id, e.sequence) for e in entries if e is not None and e.user_id == user_id]
        await self._every("delete", found)
        return len(found)

    async def record_written(self, board_id: str, through: int) -> None:
        """Every action of the board through ``through`` is in the awards topic."""
        await self._execute("written", (through, board_id))
