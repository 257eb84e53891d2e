"""Board catalog in Cassandra."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from cassandra import ConsistencyLevel

from regions.core.approximate import decode_approximate
from regions.core.boards import (
    Aggregation,
    Board,
    BoardStatus,
    Consistency,
    InvalidBoardError,
    SortOrder,
    TiePolicy,
)
from regions.core.ids import board_id_error
from regions.stores.cassandra.base import CassandraTable, Cql, Row, Statements

_COLUMNS = (
    "board_id, name, home_region, sort_order, aggregation, tie_policy, time_window, status, allow_negative, "
    "shards, consistency, approximate"
)
READ_COLUMNS = f"{_COLUMNS}, cutoffs"  # what a board is read with (its cutoffs once CLOSED)


def board_of(row: Row) -> Board:
    """The board a row of ``boards`` read with ``READ_COLUMNS`` holds."""
    return Board(
        id=row.board_id,
        name=row.name,
        home_region=row.home_region,
        sort_order=SortOrder(row.sort_order),
        aggregation=Aggregation(row.aggregation),
        tie_policy=TiePolicy(row.tie_policy),
        window=row.time_window,
        status=BoardStatus(row.status),
        allow_negative=bool(row.allow_negative),
        shards=row.shards or 1,
        consistency=Consistency(row.consistency or Consistency.REGIONAL),  # older rows hold none
        approximate=decode_approximate(row.approximate),  # older rows hold none: exact
        cutoffs=tuple(sorted((row.cutoffs or {}).items())),
    )


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """A board as the catalog holds it, with when it was created."""

    board: Board
    created_at: datetime | None


class CassandraCatalog(CassandraTable):
    """The global board catalog: one table every region reads (LOCAL_QUORUM, the local data center's
    copy, replicated to the others within seconds) and creates boards in. A board id is unique
    across regions: creation is a Paxos transaction at SERIAL, over every data center, so of two
    regions creating one id at once exactly one succeeds and the other is told it exists."""

    statements: ClassVar[Statements] = {
        "get": f"SELECT {READ_COLUMNS} FROM boards WHERE board_id = ?",
        "create": Cql(
            f"INSERT INTO boards ({_COLUMNS}, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, toTimestamp(now())) "
            "IF NOT EXISTS",
            serial_consistency=ConsistencyLevel.SERIAL,
        ),
        "set_shards": "UPDATE boards SET shards = ? WHERE board_id = ?",
        "set_consistency": "UPDATE boards SET consistency = ? WHERE board_id = ? IF EXISTS",
    }

    async def get(self, board_id: str) -> Board | None:
        return await self._one("get", (board_id,), board_of)

    async def create(self, board: Board) -> bool:
        """Create the board; False when a board with this id already exists (it is left unchanged).
        A period's id (``<board>@<key>``) is never a board of its own: refused."""
        problem = board_id_error(board.id)
        if problem is not None:
            raise InvalidBoardError(f"id {board.id!r}: {problem}")
        return await self._applied(
            "create",
            (
                board.id,
                board.name,
                board.home_region,
                board.sort_order.value,
                board.aggregation.value,
                board.tie_policy.value,
                board.window,
                board.status.value,
                board.allow_negative,
                board.shards,
                board.consistency.value,
                board.approximate_text or None,
            ),
        )

    async def set_shards(self, board_id: str, shards: int) -> None:
        """Record the board's shard count: awards accepted from then on carry it to the projections."""
        await self._execute("set_shards", (shards, board_id))

    async def set_consistency(self, board_id: str, consistency: Consistency) -> bool:
        """Record where the board's awards are accepted from now on (False: no such board). Awards
        accepted before stay where they were accepted; every intake follows within its catalog TTL."""
        return await self._applied("set_consistency", (consistency.value, board_id))

    async def all(self) -> list[Board]:
        return [entry.board for entry in await self.entries()]

    async def entries(self) -> list[CatalogEntry]:
        rows = await self._query(f"SELECT {READ_COLUMNS}, created_at FROM boards")
        return [CatalogEntry(board_of(row), row.created_at) for row in rows]
