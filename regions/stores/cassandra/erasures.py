"""Erasures of players in Cassandra (``player_erasures``, ``erasure_queue``): what was asked, how far it
is carried out, and the erasure list the intakes refuse awards by.

A player's erasure is one row keyed by the player's token (``schema.erasure.erasure_token``); it is
recorded once (``IF NOT EXISTS``: asking again answers the first), then queued for the lifecycle worker
of the region it was asked in (``erasure_queue``), and dequeued when carried out. The row is the
record; the queue only says where work is: a crash between recording and queuing leaves the row
``outstanding`` and unqueued, which asking again, or that region's worker scanning the rows, mends.
The user id is cleared when it is DONE.
Each change of the row (asked, asked anew, lifted) is a lightweight transaction conditioned on the
state it changes, which takes the player's next ``version``; the change is then appended to the
change log (``log``, ``regions.stores.cassandra.erasure_log``) and ``logged`` records that it is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import ClassVar

from cassandra import ConsistencyLevel
from cassandra.cluster import Session

from regions.stores.cassandra.base import CassandraTable, Cql, Row, Statements
from regions.stores.cassandra.erasure_log import CassandraErasureLog

_COLUMNS = (
    "player_token, user_id, reason, region, requested_at, completed_at, written, steps, lifted_at, lift_written, "
    "version, logged, WRITETIME(logged) AS logged_at"
)
SCAN_PAGE_ROWS = 5000


@dataclass(frozen=True, slots=True)
class ErasureEntry:
    token: str
    user_id: str | None  # None once DONE
    reason: str
    region: str
    requested_at: datetime
    completed_at: datetime | None = None
    written: Mapping[int, int] | None = None  # partition -> offset of its erasure record
    steps: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # store -> (status, detail)
    lifted_at: datetime | None = None
    lift_written: Mapping[int, int] | None = None
    version: int = 0  # the player's erasure changes so far (0: recorded before versions)
    logged: int | None = None  # the newest version appended to the change log
    logged_at: datetime | None = None  # when ``logged`` was recorded (the writer's clock)

    @property
    def unlogged(self) -> bool:
        """A change made but not in the change log yet (a row from before versions never is)."""
        return self.version > 0 and self.logged != self.version

    @property
    def outstanding(self) -> bool:
        """Work is left for a lifecycle worker: the change is not in the log, the erasure is not DONE,
        or it is lifted after its records were written and the lift's records are not."""
        if self.unlogged:
            return True
        if self.lifted_at is None:
            return self.user_id is not None
        return self.written is not None and self.lift_written is None


def _entry(row: Row) -> ErasureEntry:
    return ErasureEntry(
        token=row.player_token, user_id=row.user_id, reason=row.reason or "", region=row.region or "",
        requested_at=row.requested_at, completed_at=row.completed_at,
        written=None if row.written is None else dict(row.written),
        steps={k: tuple(v) for k, v in (row.steps or {}).items()},
        lifted_at=row.lifted_at, lift_written=None if row.lift_written is None else dict(row.lift_written),
        version=row.version or 0, logged=row.logged,
        logged_at=None if row.logged_at is None else datetime.fromtimestamp(row.logged_at / 1e6, UTC),
    )  # fmt: skip


class CassandraErasures(CassandraTable):
    statements: ClassVar[Statements] = {
        # Asked in any region: of two regions asking at once, one records it (Paxos over every data center).
        "request": Cql(
            "INSERT INTO player_erasures (player_token, user_id, reason, region, requested_at, version) "
            "VALUES (?, ?, ?, ?, ?, 1) IF NOT EXISTS",
            serial_consistency=ConsistencyLevel.SERIAL,
        ),
        "renew": Cql(
            "UPDATE player_erasures SET user_id = ?, reason = ?, region = ?, requested_at = ?, completed_at = null, "
            "written = null, steps = null, lifted_at = null, lift_written = null, version = ? "
            "WHERE player_token = ? IF lifted_at = ? AND version = ?",
            serial_consistency=ConsistencyLevel.SERIAL,
        ),
        "get": f"SELECT {_COLUMNS} FROM player_erasures WHERE player_token = ?",
        "queue": "INSERT INTO erasure_queue (region, player_token) VALUES (?, ?)",
        "queued": "SELECT player_token FROM erasure_queue WHERE region = ?",
        "dequeue": "DELETE FROM erasure_queue WHERE region = ? AND player_token = ?",
        "written": "UPDATE player_erasures SET written = ? WHERE player_token = ?",
        "step": "UPDATE player_erasures SET steps[?] = ? WHERE player_token = ?",
        "done": "UPDATE player_erasures SET completed_at = ?, user_id = null WHERE player_token = ?",
        "lift": Cql(
            "UPDATE player_erasures SET lifted_at = ?, lift_written = null, version = ? "
            "WHERE player_token = ? IF lifted_at = null AND version = ?",
            serial_consistency=ConsistencyLevel.SERIAL,
        ),
        "lift_written": "UPDATE player_erasures SET lift_written = ? WHERE player_token = ?",
        "logged": "UPDATE player_erasures SET logged = ? WHERE player_token = ?",
    }

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.log = CassandraErasureLog(session)

    async def request(self, token: str, user_id: str, reason: str, region: str, at: datetime) -> bool:
        """Record the erasure, for ``region`` to carry out (not queued yet: ``queue``); False when the
        player's erasure exists."""
        return await self._applied("request", (token, user_id, reason, region, at))

    async def renew(self, entry: ErasureEntry, user_id: str, reason: str, region: str, at: datetime) -> bool:
        """Erase a player again whose erasure ``entry`` was lifted (not queued yet); False when it
        changed meanwhile."""
        return entry.lifted_at is not None and await self._applied(
            "renew", (user_id, reason, region, at, entry.version + 1, entry.token, entry.lifted_at, _stored(entry))
        )

    async def queue(self, region: str, token: str) -> None:
        """Queue the player's erasure (or lift) for ``region``'s lifecycle worker; queuing twice is once."""
        await self._execute("queue", (region, token))

    async def dequeue(self, region: str, token: str) -> None:
        await self._execute("dequeue", (region, token))

    async def get(self, token: str) -> ErasureEntry | None:
        return await self._one("get", (token,), _entry)

    async def queued(self, region: str) -> list[str]:
        """The tokens of the erasures and lifts ``region`` has still to carry out."""
        return await self._rows("queued", (region,), lambda row: str(row.player_token))

    async def record_written(self, token: str, written: Mapping[int, int]) -> None:
        await self._execute("written", (dict(written), token))

    async def record_step(self, token: str, store: str, status: str, detail: str) -> None:
        await self._execute("step", (store, (status, detail), token))

    async def record_done(self, entry: ErasureEntry, at: datetime) -> None:
        """DONE: the user id goes, and the region's queue forgets it."""
        await self._execute("done", (at, entry.token))
        await self._execute("dequeue", (entry.region, entry.token))

    async def lift(self, entry: ErasureEntry, at: datetime) -> bool:
        """Lift the player's standing erasure ``entry`` (not queued yet: ``queue``); False when it
        changed meanwhile."""
        return entry.lifted_at is None and await self._applied(
            "lift", (at, entry.version + 1, entry.token, _stored(entry))
        )

    async def append_change(self, entry: ErasureEntry, lane: str) -> bool:
        """Append the entry's newest change to ``lane`` of the change log (this region's), and record
        that it is there; False when concurrent appends kept winning (try again)."""
        if await self.log.append(lane, entry.token, entry.version, entry.lifted_at is None) is None:
            return False
        await self._execute("logged", (entry.version, entry.token))
        return True

    async def record_lift_written(self, token: str, region: str, written: Mapping[int, int]) -> None:
        await self._execute("lift_written", (dict(written), token))
        await self._execute("dequeue", (region, token))

    async def entries(self) -> AsyncIterator[list[ErasureEntry]]:
        """Every player's erasure, a page at a time (a scan of the table)."""
        async for rows in self._pages(f"SELECT {_COLUMNS} FROM player_erasures", SCAN_PAGE_ROWS):
            yield [_entry(row) for row in rows]

    async def states(self) -> AsyncIterator[list[tuple[str, int, bool]]]:
        """Every player's ``(token, version, erased)``, a page at a time (a scan of the table: the
        erasure list's first read; later ones read the change log)."""
        scan = "SELECT player_token, version, lifted_at FROM player_erasures"
        async for rows in self._pages(scan, SCAN_PAGE_ROWS):
            yield [(row.player_token, row.version or 0, row.lifted_at is None) for row in rows]


def _stored(entry: ErasureEntry) -> int | None:
    """The entry's version as the row holds it (null before versions), for a transaction's condition."""
    return entry.version or None
