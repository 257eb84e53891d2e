"""The periods of windowed boards in the Cassandra catalog, and the expiry of rolling boards' days.

A period's row is made when the board's home region begins closing it (``begin``, IF NOT EXISTS, as
CLOSING), then changes only along the lifecycle's transitions with lightweight transactions, like a
board's close (``regions.stores.cassandra.lifecycle``). Its methods take the period's board id
``<board>@<key>`` (``schema.scoped``), so the lifecycle worker closes a period with the same steps as
a board.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cassandra.cluster import Session

from regions.core.boards import Board, BoardStatus
from regions.core.periods import PeriodSpan
from regions.stores.cassandra.catalog import _READ_COLUMNS, _board
from regions.stores.cassandra.lifecycle import _ms
from regions.stores.cassandra.session import execute
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


def _at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def _period(board_id: str, row: Any) -> PeriodRecord:
    return PeriodRecord(
        board_id=board_id, key=row.period, start_ms=_ms(row.starts_at) or 0, end_ms=_ms(row.ends_at) or 0,
        status=BoardStatus(row.status), closing_at_ms=_ms(row.closing_at), markers=frozenset(row.markers or {}),
        cutoffs=dict(row.cutoffs or {}), result_version=row.result_version, closed_at_ms=_ms(row.closed_at),
    )  # fmt: skip


def _split(period_board_id: str) -> tuple[str, str]:
    board, key = split_board_id(period_board_id)
    if key is None:
        raise ValueError(f"{period_board_id!r} names no period of a board")
    return board, key


class CassandraPeriods:
    def __init__(self, session: Session) -> None:
        self._session = session
        self._recent = session.prepare(
            f"SELECT {_PERIOD_COLUMNS} FROM board_periods WHERE board_id = ? LIMIT ?"
        )
        self._between = session.prepare(
            f"SELECT {_PERIOD_COLUMNS} FROM board_periods WHERE board_id = ? AND period >= ? AND period <= ?"
        )
        self._begin = session.prepare(
            "INSERT INTO board_periods (board_id, period, starts_at, ends_at, status, closing_at) "
            "VALUES (?, ?, ?, ?, 'CLOSING', ?) IF NOT EXISTS"
        )
        self._markers = session.prepare(
            "UPDATE board_periods SET markers[?] = ? WHERE board_id = ? AND period = ?"
        )
        self._finish = session.prepare(
            "UPDATE board_periods SET status = 'CLOSED', cutoffs = ?, result_version = ?, closed_at = ? "
            "WHERE board_id = ? AND period = ? IF status = 'CLOSING'"
        )
        self._expired = session.prepare("UPDATE boards SET expired_through = ? WHERE board_id = ?")
        self._created = session.prepare("SELECT created_at FROM boards WHERE board_id = ?")

    async def windowed(self) -> list[WindowedBoard]:
        """Every board with a time window (a scan of the catalog, which holds boards, not players)."""
        rows = await execute(
            self._session, f"SELECT {_READ_COLUMNS}, created_at, expired_through FROM boards"
        )
        found = []
        for row in rows:
            if row.time_window:
                found.append(WindowedBoard(_board(row), _ms(row.created_at), row.expired_through))
        return found

    async def created_at_ms(self, board_id: str) -> int | None:
        """When the board was created (None: unknown board, or a row from before it was recorded)."""
        row = (await execute(self._session, self._created, (board_id,))).one()
        return None if row is None else _ms(row.created_at)

    async def recent(self, board_id: str, limit: int) -> list[PeriodRecord]:
        """The board's newest period rows, newest first."""
        rows = await execute(self._session, self._recent, (board_id, limit))
        return [_period(board_id, row) for row in rows]

    async def between(self, board_id: str, first_key: str, last_key: str) -> dict[str, PeriodRecord]:
        """The board's period rows with keys in ``first_key .. last_key``, by key."""
        rows = await execute(self._session, self._between, (board_id, first_key, last_key))
        return {row.period: _period(board_id, row) for row in rows}

    async def begin(self, board_id: str, span: PeriodSpan, at: datetime) -> bool:
        """The period begins closing (its row is made CLOSING); False when it has a row already."""
        params = (board_id, span.key, _at(span.start_ms), _at(span.end_ms), at)
        return bool((await execute(self._session, self._begin, params)).was_applied)

    async def record_markers(self, period_board_id: str, region: str, at: datetime) -> None:
        """``region`` wrote the period's cutoff marker into every partition of its awards topic."""
        board, key = _split(period_board_id)
        await execute(self._session, self._markers, (region, at, board, key))

    async def finish_close(
        self, period_board_id: str, cutoffs: Mapping[str, int], version: int, at: datetime
    ) -> bool:
        """CLOSING -> CLOSED with the cutoffs and the archived result version."""
        board, key = _split(period_board_id)
        result = await execute(self._session, self._finish, (dict(cutoffs), version, at, board, key))
        return bool(result.was_applied)

    async def record_expiry(self, board_id: str, expired_through: int) -> None:
        """The home region wrote the expiry markers of every day up to ``expired_through``."""
        await execute(self._session, self._expired, (expired_through, board_id))
