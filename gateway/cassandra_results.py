"""Archived results of closed boards (``board_results``): the versions and when they were made."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cassandra.cluster import Session

from regions.cassandra_store import execute


@dataclass(frozen=True, slots=True)
class ResultRecord:
    board_id: str
    version: int
    created_at: datetime | None
    reason: str | None


class CassandraResults:
    def __init__(self, session: Session) -> None:
        self._session = session
        columns = "board_id, result_version, created_at, reason"
        self._latest = session.prepare(f"SELECT {columns} FROM board_results WHERE board_id = ? LIMIT 1")
        self._version = session.prepare(
            f"SELECT {columns} FROM board_results WHERE board_id = ? AND result_version = ?"
        )

    async def get(self, board_id: str, version: int | None) -> ResultRecord | None:
        """One archived version, or the newest when ``version`` is None."""
        if version is None:
            rows = await execute(self._session, self._latest, (board_id,))
        else:
            rows = await execute(self._session, self._version, (board_id, version))
        row = rows.one()
        if row is None:
            return None
        return ResultRecord(row.board_id, row.result_version, row.created_at, row.reason)
