"""Cassandra audit adapter: one immutable history row per applied award (INSERT ... IF NOT EXISTS)."""

from __future__ import annotations

from dataclasses import dataclass

from cassandra.cluster import Session

from regions.cassandra_store import execute, execute_all

_INSERT = (
    "INSERT INTO award_history (event_id, board_id, user_id, match_id, award_type, amount, "
    "occurred_at, region, source_partition, source_offset, total, version, recorded_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, toTimestamp(now())) IF NOT EXISTS"
)


@dataclass(frozen=True, slots=True)
class AuditRow:
    event_id: str
    board_id: str
    user_id: str
    match_id: str
    award_type: str
    amount: int
    occurred_at_ms: int | None
    region: str
    source_partition: int
    source_offset: int
    total: int
    version: int


def _values(row: AuditRow) -> tuple[object, ...]:
    return (
        row.event_id, row.board_id, row.user_id, row.match_id, row.award_type, row.amount,
        row.occurred_at_ms, row.region, row.source_partition, row.source_offset, row.total, row.version,
    )  # fmt: skip


class CassandraAudit:
    """Writes audit rows; a repeat of an event id is refused by Cassandra, never duplicated."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._insert = session.prepare(_INSERT)

    async def record(self, row: AuditRow) -> bool:
        """Insert the row unless its event id exists; True when this call wrote it."""
        result = await execute(self._session, self._insert, _values(row))
        return bool(result.was_applied)

    async def record_many(self, rows: list[AuditRow]) -> list[bool | Exception]:
        """``record`` for many rows at once: per row, whether this call wrote it, or its error."""
        results = await execute_all(self._session, self._insert, [_values(r) for r in rows])
        return [r if isinstance(r, Exception) else bool(r.was_applied) for r in results]

    async def count(self, event_id: str) -> int:
        """How many rows hold this event id (0 or 1 by construction)."""
        rows = await execute(
            self._session, "SELECT event_id FROM award_history WHERE event_id = %s", (event_id,)
        )
        return len(list(rows))
