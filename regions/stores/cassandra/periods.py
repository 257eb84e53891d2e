"""The periods of windowed boards in the Cassandra catalog, and the expiry of rolling boards' days.

A period's row is made when the board's home region begins closing it (``begin``, IF NOT EXISTS, as
CLOSING), then changes only along the lifecycle's transitions with the lightweight transactions of a
board's close (``regions.stores.cassandra.closing``). Those steps take the period's board id
``<board>@<key>`` (``schema.scoped``), so the lifecycle worker closes a period with the same steps as
a board.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import ClassVar

from regions.core.boards import Board, BoardStatus
from regions.core.periods import PeriodSpan
from regions.stores.cassandra.base import Row, Statements, ms
from regions.stores.cassandra.catalog import board_of
from regions.stores.cassandra.closing import CloseTable, ClosingTable, close_fields
from schema.scoped import split_board_id

_PERIOD_COLUMNS = (
    "period, starts_at, ends_at, status, closing_at, markers, cutoffs, result_version, closed_at"
)


@dataclass(frozen=True, slots=True)
class PeriodRecord:
    """What the catalog holds about one period of a board."""

    board_id: str
    key: str
    start_ms: int
    end_ms: int
    status: BoardStatus
    closing_at_ms: int | None = None
    markers: frozenset[str] = frozenset()
    cutoffs: Mapping[str, int] = field(default_factory=dict)
    result_version: int | None = None
    closed_at_ms: int | None = None


@dataclass(frozen=True, slots=True)
class WindowedBoard:
    """A board with a time window, with when it was created and (ROLLING) its expired days."""

    board: Board
    created_at_ms: int | None
    expired_through: int | None


WINDOWED_COLUMNS = "created_at, expired_through"  # read with a board's READ_COLUMNS for windowed_of


def windowed_of(row: Row) -> WindowedBoard | None:
    """The board of a catalog row read with ``WINDOWED_COLUMNS``, when it has a time window."""
    return WindowedBoard(board_of(row), ms(row.created_at), row.expired_through) if row.time_window else None


def _at(at_ms: int) -> datetime:
    return datetime.fromtimestamp(at_ms / 1000, UTC)


def _period(board_id: str, row: Row) -> PeriodRecord:
    start_ms, end_ms = ms(row.starts_at) or 0, ms(row.ends_at) or 0
    return PeriodRecord(
        board_id=board_id,
        key=row.period,
        start_ms=start_ms,
        end_ms=end_ms,
        status=BoardStatus(row.status),
        **close_fields(row),
    )


def _split(period_board_id: str) -> tuple[str, str]:
    board, key = split_board_id(period_board_id)
    if key is None:
        raise ValueError(f"{period_board_id!r} names no period of a board")
    return board, key


PERIOD_CLOSES = CloseTable("board_periods", ("board_id", "period"), _split)


class CassandraPeriods(ClosingTable):
    """``record_markers`` and ``finish_close`` raise ValueError for a board id naming no period."""

    close = PERIOD_CLOSES
    statements: ClassVar[Statements] = {
        "recent": f"SELECT {_PERIOD_COLUMNS} FROM board_periods WHERE board_id = ? LIMIT ?",
        "between": f"SELECT {_PERIOD_COLUMNS} FROM board_periods WHERE board_id = ? AND period >= ? AND period <= ?",
        "begin": (
            "INSERT INTO board_periods (board_id, period, starts_at, ends_at, status, closing_at) "
            "VALUES (?, ?, ?, ?, 'CLOSING', ?) IF NOT EXISTS"
        ),
        "expired": "UPDATE boards SET expired_through = ? WHERE board_id = ?",
        "created": "SELECT created_at FROM boards WHERE board_id = ?",
        "publish": (
            "UPDATE board_periods SET result_version = ? WHERE board_id = ? AND period = ? "
            "IF status = 'CLOSED' AND result_version = ?"
        ),
    }

    async def created_at_ms(self, board_id: str) -> int | None:
        """When the board was created (None: unknown board, or a row from before it was recorded)."""
        return await self._one("created", (board_id,), lambda row: ms(row.created_at))

    async def recent(self, board_id: str, limit: int) -> list[PeriodRecord]:
        """The board's newest period rows, newest first."""
        return await self._rows("recent", (board_id, limit), lambda row: _period(board_id, row))

    async def between(self, board_id: str, first_key: str, last_key: str) -> dict[str, PeriodRecord]:
        """The board's period rows with keys in ``first_key .. last_key``, by key."""
        rows = await self._execute("between", (board_id, first_key, last_key))
        return {row.period: _period(board_id, row) for row in rows}

    async def begin(self, board_id: str, span: PeriodSpan, at: datetime) -> bool:
        """The period begins closing (its row is made CLOSING); False when it has a row already."""
        return await self._applied("begin", (board_id, span.key, _at(span.start_ms), _at(span.end_ms), at))

    async def record_expiry(self, board_id: str, expired_through: int) -> None:
        """The home region wrote the expiry markers of every day up to ``expired_through``."""
        await self._execute("expired", (expired_through, board_id))

    async def publish_version(self, period_board_id: str, version: int) -> bool:
        """A CLOSED period's newest result becomes ``version`` (from ``version - 1``); False when it was
        not at the version before (another worker published it first)."""
        return await self._applied("publish", (version, *_split(period_board_id), version - 1))
