"""A close's state in Cassandra, written once for the two tables that hold one: a board's row in
``boards`` and a period's row in ``board_periods``.

Only lightweight transactions change the ``status`` column, and each only along
``regions.core.lifecycle.TRANSITIONS`` (``transition`` refuses any other when it builds the CQL):
many gateways and workers may race, and the condition on the status lets exactly one change happen.
How a row becomes CLOSING differs (a board's row exists and leaves OPEN, a period's row is made
CLOSING), so each adapter states its own first step; the rest is here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, TypedDict

from regions.core.boards import BoardStatus
from regions.core.lifecycle import check_transition
from regions.stores.cassandra.base import CassandraTable, Row, Statements, ms

_MARKERS = "close.markers"
_FINISH = "close.finish"


@dataclass(frozen=True, slots=True)
class CloseTable:
    """Where closes are held: the table, the columns of its primary key and how a close's id (the
    board id the lifecycle worker names it by) gives the key's values."""

    name: str
    key: tuple[str, ...]
    key_of: Callable[[str], tuple[str, ...]]

    @property
    def where(self) -> str:
        return " AND ".join(f"{column} = ?" for column in self.key)

    def transition(self, source: BoardStatus, target: BoardStatus, sets: str) -> str:
        """The statement that moves a row from ``source`` to ``target``, setting ``sets`` with it;
        IllegalTransition when the lifecycle does not allow the change."""
        check_transition(source, target)
        return f"UPDATE {self.name} SET status = '{target}', {sets} WHERE {self.where} IF status = '{source}'"

    def statements(self) -> Statements:
        return {
            _MARKERS: f"UPDATE {self.name} SET markers[?] = ? WHERE {self.where}",
            _FINISH: self.transition(
                BoardStatus.CLOSING, BoardStatus.CLOSED, "cutoffs = ?, result_version = ?, closed_at = ?"
            ),
        }


class CloseFields(TypedDict):
    """What a row holds about its close, in the fields of ``CloseRecord`` and ``PeriodRecord``."""

    closing_at_ms: int | None
    markers: frozenset[str]  # regions that wrote their cutoff markers
    cutoffs: Mapping[str, int]  # recorded at CLOSED
    result_version: int | None
    closed_at_ms: int | None


def close_fields(row: Row) -> CloseFields:
    return CloseFields(
        closing_at_ms=ms(row.closing_at),
        markers=frozenset(row.markers or {}),
        cutoffs=dict(row.cutoffs or {}),
        result_version=row.result_version,
        closed_at_ms=ms(row.closed_at),
    )


class ClosingTable(CassandraTable):
    """An adapter whose rows close: the steps after CLOSING, on the rows of ``close``."""

    close: ClassVar[CloseTable]

    @classmethod
    def statements_to_prepare(cls) -> Statements:
        return {**cls.statements, **cls.close.statements()}

    async def record_markers(self, board_id: str, region: str, at: datetime) -> None:
        """``region`` wrote its cutoff marker into every partition of its awards topic."""
        await self._execute(_MARKERS, (region, at, *self.close.key_of(board_id)))

    async def finish_close(
        self, board_id: str, cutoffs: Mapping[str, int], version: int, at: datetime
    ) -> bool:
        """CLOSING -> CLOSED with the cutoffs and the archived result version; False when the row
        was not CLOSING (another worker finished first)."""
        key = self.close.key_of(board_id)
        return await self._applied(_FINISH, (dict(cutoffs), version, at, *key))
