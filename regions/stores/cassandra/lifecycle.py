"""A board's lifecycle in the Cassandra catalog: status changes with lightweight transactions.

Only these statements change a board's status, and each only from the status the lifecycle allows
(``regions.core.lifecycle.TRANSITIONS``): OPEN -> CLOSING (``begin_close``) and CLOSING -> CLOSED
(``finish_close``, shared with a period's close: ``regions.stores.cassandra.closing``). Many gateways
and workers may race; the LWT lets exactly one change happen. A CLOSED board's newest result version
moves on only by one, from the version it is at (``publish_version``: a correction's archive is
complete).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar

from regions.core.boards import Board, BoardStatus
from regions.stores.cassandra.base import Row, Statements
from regions.stores.cassandra.catalog import READ_COLUMNS, board_of
from regions.stores.cassandra.closing import CloseTable, ClosingTable, close_fields
from regions.stores.cassandra.periods import WINDOWED_COLUMNS, WindowedBoard, windowed_of

_CLOSE_COLUMNS = f"{READ_COLUMNS}, closing_at, close_reason, markers, result_version, closed_at"
BOARD_CLOSES = CloseTable("boards", ("board_id",), lambda board_id: (board_id,))


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


@dataclass(frozen=True, slots=True)
class CatalogScan:
    """Every board with its close, and those with a time window."""

    records: list[CloseRecord]
    windowed: list[WindowedBoard]


def _record(row: Row) -> CloseRecord:
    return CloseRecord(board=board_of(row), close_reason=row.close_reason, **close_fields(row))


class CassandraLifecycle(ClosingTable):
    close = BOARD_CLOSES
    statements: ClassVar[Statements] = {
        "get": f"SELECT {_CLOSE_COLUMNS} FROM boards WHERE board_id = ?",
        "begin": BOARD_CLOSES.transition(
            BoardStatus.OPEN, BoardStatus.CLOSING, "closing_at = ?, close_reason = ?"
        ),
        "publish": "UPDATE boards SET result_version = ? WHERE board_id = ? IF status = 'CLOSED' AND result_version = ?",
    }

    async def record(self, board_id: str) -> CloseRecord | None:
        return await self._one("get", (board_id,), _record)

    async def scan(self) -> CatalogScan:
        """One scan of the catalog (it holds boards, not players)."""
        rows = list(await self._query(f"SELECT {_CLOSE_COLUMNS}, {WINDOWED_COLUMNS} FROM boards"))
        return CatalogScan([_record(row) for row in rows], [w for row in rows if (w := windowed_of(row))])

    async def records(self) -> list[CloseRecord]:
        """Every board with its close."""
        return (await self.scan()).records

    async def closing(self) -> list[CloseRecord]:
        """Every CLOSING board."""
        return [r for r in await self.records() if r.board.status is BoardStatus.CLOSING]

    async def begin_close(self, board_id: str, reason: str | None, at: datetime) -> bool:
        """OPEN -> CLOSING; False when the board was not OPEN (it is left as it is)."""
        return await self._applied("begin", (at, reason, board_id))

    async def publish_version(self, board_id: str, version: int) -> bool:
        """A CLOSED board's newest result becomes ``version`` (from ``version - 1``); False when it
        was not at the version before (another worker published it first)."""
        return await self._applied("publish", (version, board_id, version - 1))
