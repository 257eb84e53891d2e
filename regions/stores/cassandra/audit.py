"""Cassandra audit adapter: one history row per applied award, keyed by its event id.

A row is a plain write whose every value, and whose write timestamp, come from the applied-award
record (the timestamp is the record's time, when the processor applied the award), so writing the
same record again is byte-identical: idempotent without a lightweight transaction, whose Paxos round
costs Cassandra several times the write itself. When an event id is applied once more (a replay of
the processor's input after a fix, or a new award reusing the id after the dedupe horizon), the row
of the latest application wins whole, whatever order the records are written in.

Rows go in unlogged batches of at most ``batch_rows``, each holding rows of one replica set only:
one request to the replicas concerned instead of one per row, and never a fan-out across the ring.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from cassandra import InvalidRequest
from cassandra.cluster import Session
from cassandra.query import BatchStatement, BatchType, BoundStatement

from regions.stores.cassandra.base import CassandraTable, Row, Statements, ms
from regions.stores.cassandra.session import execute_each


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
    applied_at_ms: int  # its applied-award record's time: recorded_at, and the write's timestamp


def _values(row: AuditRow) -> tuple[object, ...]:
    return (
        row.event_id, row.board_id, row.user_id, row.match_id, row.award_type, row.amount,
        row.occurred_at_ms, row.region, row.source_partition, row.source_offset, row.total, row.version,
        row.applied_at_ms, row.applied_at_ms * 1000,
    )  # fmt: skip


_COLUMNS = (
    "event_id, board_id, user_id, match_id, award_type, amount, occurred_at, region, source_partition, "
    "source_offset, total, version, recorded_at"
)


def _history(row: Row) -> AuditRow:
    return AuditRow(
        row.event_id, row.board_id, row.user_id, row.match_id, row.award_type, row.amount, ms(row.occurred_at),
        row.region, row.source_partition, row.source_offset, row.total, row.version, ms(row.recorded_at) or 0,
    )  # fmt: skip


class CassandraAudit(CassandraTable):
    """Writes audit rows; writing a row again leaves the same single row."""

    statements: ClassVar[Statements] = {
        "insert": (
            "INSERT INTO award_history (event_id, board_id, user_id, match_id, award_type, amount, "
            "occurred_at, region, source_partition, source_offset, total, version, recorded_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TIMESTAMP ?"
        ),
        "exists": "SELECT event_id FROM award_history WHERE event_id = ?",
        # by the Storage-Attached Index on user_id (009): no scan of the table
        "of_user": f"SELECT {_COLUMNS} FROM award_history WHERE user_id = ?",
        "delete": "DELETE FROM award_history WHERE event_id = ?",
    }

    def __init__(self, session: Session, batch_rows: int = 10) -> None:
        super().__init__(session)
        self._batch_rows = batch_rows

    async def write_many(self, rows: Sequence[AuditRow]) -> list[Exception | None]:
        """Write every row: per row None once written, or its error. A value the driver cannot bind
        fails its row alone, and so does a row Cassandra refuses (its batch is retried row by row)."""
        outcomes: list[Exception | None] = [None] * len(rows)
        bound: dict[int, BoundStatement] = {}
        insert = self._statement("insert")
        for slot, row in enumerate(rows):
            try:
                bound[slot] = insert.bind(_values(row))
            except (TypeError, ValueError) as exc:
                outcomes[slot] = exc
        batches = self._batches(bound)
        results = await execute_each(self._session, [(self._batch(bound, slots), None) for slots in batches])
        refused: list[int] = []
        for slots, result in zip(batches, results, strict=True):
            if isinstance(result, InvalidRequest) and len(slots) > 1:
                refused += slots  # which of them does Cassandra refuse? each on its own
                continue
            for slot in slots:
                outcomes[slot] = result if isinstance(result, Exception) else None
        singles = await execute_each(self._session, [(bound[slot], None) for slot in refused])
        for slot, result in zip(refused, singles, strict=True):
            outcomes[slot] = result if isinstance(result, Exception) else None
        return outcomes

    def _batches(self, bound: dict[int, BoundStatement]) -> list[list[int]]:
        """The rows' slots in groups of at most ``batch_rows``, each group within one replica set."""
        by_replicas: dict[tuple[str, ...], list[int]] = {}
        metadata = self._session.cluster.metadata
        for slot, statement in bound.items():
            replicas = metadata.get_replicas(statement.keyspace, statement.routing_key)
            by_replicas.setdefault(tuple(sorted(str(h.endpoint) for h in replicas)), []).append(slot)
        n = self._batch_rows
        return [slots[i : i + n] for slots in by_replicas.values() for i in range(0, len(slots), n)]

    def _batch(self, bound: dict[int, BoundStatement], slots: list[int]) -> Any:
        if len(slots) == 1:
            return bound[slots[0]]
        batch = BatchStatement(batch_type=BatchType.UNLOGGED)
        for slot in slots:
            batch.add(bound[slot])
        return batch

    async def present_many(self, event_ids: Sequence[str]) -> list[bool | Exception]:
        """Per event id, whether its row exists, or the error of the read."""
        results = await self._each("exists", [(e,) for e in event_ids])
        return [r if isinstance(r, Exception) else bool(list(r)) for r in results]

    async def count(self, event_id: str) -> int:
        """How many rows hold this event id (0 or 1 by construction)."""
        rows = await self._query("SELECT event_id FROM award_history WHERE event_id = %s", (event_id,))
        return len(list(rows))

    async def rows_of(self, user_id: str) -> list[AuditRow]:
        """Every history row of the player, by event id."""
        return sorted(await self._rows("of_user", (user_id,), _history), key=lambda r: r.event_id)

    async def delete(self, event_ids: Sequence[str]) -> None:
        """Delete these rows. The tombstones take the time of the delete, later than any row's write
        timestamp (its award's applied time), so writing an old record again stays deleted."""
        await self._every("delete", [(e,) for e in event_ids])
