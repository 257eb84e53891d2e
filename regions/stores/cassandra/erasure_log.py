"""The erasure change log in Cassandra (``erasure_changes``, ``erasure_lanes``): how a region appends
a change of a player's erasure to its lane, and how a reader takes a lane from where it stopped
(the rules: ``regions.core.erasure_changes``).

Appending: the lane is registered first (a reader finds it before its first entry), then the newest
entry of the lane's newest partition is read at LOCAL_SERIAL (every committed insert of this data
center, and one in progress completed) and the next sequence is inserted ``IF NOT EXISTS``; a lost
race reads again. An entry is never inserted before the one it follows was seen committed, so a lane
has no gaps. Only the region's own requests append to its lane, so Paxos stays in its data center.
"""

from __future__ import annotations

from typing import ClassVar

from cassandra import ConsistencyLevel

from regions.core.erasure_changes import PAGE_SIZE, ErasureChange, next_sequence, page_of
from regions.stores.cassandra.base import CassandraTable, Cql, Row, Statements

APPEND_ATTEMPTS = 50  # lost races (concurrent appends to one lane: one wins each round) before giving up


def _change(row: Row) -> ErasureChange:
    return ErasureChange(row.sequence, row.player_token, row.version, bool(row.erased))


class CassandraErasureLog(CassandraTable):
    statements: ClassVar[Statements] = {
        "register": "INSERT INTO erasure_lanes (scope, lane) VALUES ('lanes', ?)",
        "lanes": "SELECT lane FROM erasure_lanes WHERE scope = 'lanes'",
        "newest_page": "SELECT newest_page FROM erasure_lanes WHERE scope = 'lanes' AND lane = ?",
        "page_started": "UPDATE erasure_lanes SET newest_page = ? WHERE scope = 'lanes' AND lane = ?",
        "last": Cql(
            "SELECT sequence FROM erasure_changes WHERE lane = ? AND page = ? ORDER BY sequence DESC LIMIT 1",
            consistency=ConsistencyLevel.LOCAL_SERIAL,
        ),
        "append": (
            "INSERT INTO erasure_changes (lane, page, sequence, player_token, version, erased) "
            "VALUES (?, ?, ?, ?, ?, ?) IF NOT EXISTS"
        ),
        "from": (
            "SELECT sequence, player_token, version, erased FROM erasure_changes "
            "WHERE lane = ? AND page = ? AND sequence >= ? LIMIT ?"
        ),
    }

    async def append(self, lane: str, token: str, version: int, erased: bool) -> int | None:
        """Append the change to ``lane``; its sequence, or None when concurrent appends kept winning."""
        await self._execute("register", (lane,))
        page = await self._one("newest_page", (lane,), lambda row: row.newest_page) or 0
        for _ in range(APPEND_ATTEMPTS):
            sequence = None
            while sequence is None:  # from the newest partition known, past the full ones
                sequence = next_sequence(page, await self._one("last", (lane, page), lambda row: row.sequence))
                if sequence is None:
                    page += 1
            if await self._applied("append", (lane, page, sequence, token, version, erased)):
                if sequence % PAGE_SIZE == 0:  # a new partition: writers start looking there
                    await self._execute("page_started", (page, lane))
                return sequence
        return None

    async def lanes(self) -> list[str]:
        return await self._rows("lanes", None, lambda row: str(row.lane))

    async def read(self, lane: str, sequence: int, limit: int) -> list[ErasureChange]:
        """Up to ``limit`` entries of the lane from ``sequence`` on, within its partition."""
        return await self._rows("from", (lane, page_of(sequence), sequence, limit), _change)
