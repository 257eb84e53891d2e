"""A board's lifecycle in the Cassandra catalog: status changes with lightweight transactions.

Only these statements change a board's status, and each only from the status the lifecycle allows
(``regions.core.lifecycle.TRANSITIONS``): OPEN -> CLOSING (``begin_close``) and CLOSING -> CLOSED
(``finish_close``). Many gateways and workers may race; the LWT lets exactly one change happen.
A CLOSED board's newest result version moves on only by one, from the version it is at
(``publish_version``: a correction's archive is complete).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cassandra.cluster import Session

from regions.core.boards import Board, BoardStatus
from regions.stores.cassandra.catalog import _READ_COLUMNS, _board
from regions.stores.cassandra.session import execute

_CLOSE_COLUMNS = f"{_READ_COLUMNS}, closing_at, close_reason, markers, result_version, closed_at"


def _ms(at: datetime | None) -> int | None:
    if at is None:
        return None
    return int((at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class CloseRecord:
    """A board with what the catalog holds about its close."""

    board: Board
    closing_at_ms: int | None = None
    close_reason: str | None = None
    markers: frozenset[str] = frozenset()  # regions that wrote their cutoff markers
    cutoffs: Mapping[str, int] = field(default_factory=dict)  # recorded at CLOSED
    result_version: int | None = None
    closed_at_ms: int | None = None


def _record(row: Any) -> CloseRecord:
    return CloseRecord(
        board=_board(row),
        closing_at_ms=_ms(row.closing_at),
        close_reason=row.close_reason,
        markers=frozenset(row.markers or {}),
        cutoffs=dict(row.cutoffs or {}),
        result_version=row.result_version,
        closed_at_ms=_ms(row.closed_at),
    )


class CassandraLifecycle:
    def __init__(self, session: Session) -> None:
        self._session = session
        self._get = session.prepare(f"SELECT {_CLOSE_COLUMNS} FROM boards WHERE board_id = ?")
        self._begin = session.prepare(
            "UPDATE boards SET status = 'CLOSING', closing_at = ?, close_reason = ? WHERE board_id = ? "
            "IF status = 'OPEN'"
        )
        self._markers = session.prepare("UPDATE boards SET markers[?] = ? WHERE board_id = ?")
        self._finish = session.prepare(
            "UPDATE boards SET status = 'CLOSED', cutoffs = ?, result_version = ?, closed_at = ? "
            "WHERE board_id = ? IF status = 'CLOSING'"
        )
        self._publish = session.prepare(
            "UPDATE boards SET result_version = ? WHERE board_id = ? IF status = 'CLOSED' AND result_version = ?"
        )

    async def record(self, board_id: str) -> CloseRecord | None:
        row = (await execute(self._session, self._get, (board_id,))).one()
        return None if row is None else _record(row)

    async def records(self) -> list[CloseRecord]:
        """Every board with its close (a scan of the catalog, which holds boards, not players)."""
        rows = await execute(self._session, f"SELECT {_CLOSE_COLUMNS} FROM boards")
        return [_record(row) for row in rows]

    async def closing(self) -> list[CloseRecord]:
        """Every CLOSING board."""
        return [r for r in await self.records() if r.board.status is BoardStatus.CLOSING]

    async def begin_close(self, board_id: str, reason: str | None, at: datetime) -> bool:
        """OPEN -> CLOSING; False when the board was not OPEN (it is left as it is)."""
        result = await execute(self._session, self._begin, (at, reason, board_id))
        return bool(result.was_applied)

    async def record_markers(self, board_id: str, region: str, at: datetime) -> None:
        """``region`` wrote its cutoff marker into every partition of its awards topic."""
        await execute(self._session, self._markers, (region, at, board_id))

    async def finish_close(
        self, board_id: str, cutoffs: Mapping[str, int], version: int, at: datetime
    ) -> bool:
        """CLOSING -> CLOSED with the cutoffs and the archived result version; False when the board
        was not CLOSING (another worker finished first)."""
        result = await execute(self._session, self._finish, (dict(cutoffs), version, at, board_id))
        return bool(result.was_applied)

    async def publish_version(self, board_id: str, version: int) -> bool:
        """A CLOSED board's newest result becomes ``version`` (from ``version - 1``); False when it
        was not at the version before (another worker published it first)."""
        result = await execute(self._session, self._publish, (version, board_id, version - 1))
        return bool(result.was_applied)
