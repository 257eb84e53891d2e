"""How a Cassandra table adapter prepares and runs its statements, written once.

An adapter names its statements in ``statements`` (name -> CQL); they are prepared when it is made,
which :class:`regions.stores.cassandra.session.CassandraConnection` does once per session (in a worker
thread: preparing blocks). Its methods then run them by name without blocking the event loop and map
the driver's rows (untyped named tuples) into values.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

from cassandra.cluster import Session
from cassandra.query import SimpleStatement

from regions.stores.cassandra.session import execute, execute_all

T = TypeVar("T")
Row = Any  # a row as the driver returns it: a named tuple of the selected columns
Params = Sequence[object] | None


@dataclass(frozen=True, slots=True)
class Cql:
    """A statement run otherwise than at the session profile's levels: a lightweight transaction
    whose Paxos runs at ``serial_consistency`` rather than LOCAL_SERIAL (the catalog's board
    creations: SERIAL, across regions), or a read at ``consistency`` (a read at LOCAL_SERIAL sees
    every committed transaction of the data center, and completes one in progress)."""

    text: str
    serial_consistency: int | None = None
    consistency: int | None = None


Statements = Mapping[str, str | Cql]  # an adapter's statements by name


def ms(at: datetime | None) -> int | None:
    """A timestamp column in ms since the epoch; the driver returns naive datetimes in UTC."""
    if at is None:
        return None
    return int((at if at.tzinfo else at.replace(tzinfo=UTC)).timestamp() * 1000)


class CassandraTable:
    """An adapter on one session: the statements it names, prepared once, run by name.

    Statements it runs rarely (scans of the catalog) are not prepared: ``_query`` sends their text."""

    statements: ClassVar[Statements] = {}

    def __init__(self, session: Session) -> None:
        self._session = session
        self._prepared = {name: self._prepare(cql) for name, cql in self.statements_to_prepare().items()}

    @classmethod
    def statements_to_prepare(cls) -> Statements:
        """Every statement the adapter runs by name: ``statements`` unless a subclass adds some."""
        return cls.statements

    def _prepare(self, cql: str | Cql) -> Any:
        if isinstance(cql, str):
            return self._session.prepare(cql)
        prepared = self._session.prepare(cql.text)
        if cql.serial_consistency is not None:
            prepared.serial_consistency_level = cql.serial_consistency
        if cql.consistency is not None:
            prepared.consistency_level = cql.consistency
        return prepared

    def _statement(self, name: str) -> Any:
        """The prepared statement ``name``, e.g. to bind it into a batch."""
        return self._prepared[name]

    async def _execute(self, name: str, params: Params = None) -> Any:
        """Run the prepared statement ``name``; returns the driver's result set."""
        return await execute(self._session, self._prepared[name], params)

    async def _query(self, cql: str, params: Params = None) -> Any:
        """Run a statement that is not prepared (``%s`` placeholders); returns the result set."""
        return await execute(self._session, cql, params)

    async def _pages(self, cql: str, page_rows: int) -> AsyncIterator[list[Row]]:
        """The rows of a scan that is not prepared, a page of at most ``page_rows`` at a time: each
        page is fetched without blocking the event loop (iterating a result set past its first page
        would fetch the next one synchronously)."""
        statement = SimpleStatement(cql, fetch_size=page_rows)
        paging_state = None
        while True:
            result = await execute(self._session, statement, None, paging_state=paging_state)
            yield list(result.current_rows)
            paging_state = result.paging_state
            if paging_state is None:
                return

    async def _applied(self, name: str, params: Params = None) -> bool:
        """Run the lightweight transaction ``name``; whether its condition held (it was applied)."""
        return bool((await self._execute(name, params)).was_applied)

    async def _one(self, name: str, params: Params, into: Callable[[Row], T | None]) -> T | None:
        """The first row of ``name`` as ``into`` maps it; None when there is none."""
        row = (await self._execute(name, params)).one()
        return None if row is None else into(row)

    async def _rows(self, name: str, params: Params, into: Callable[[Row], T]) -> list[T]:
        """Every row of ``name``, as ``into`` maps it."""
        return [into(row) for row in await self._execute(name, params)]

    async def _each(self, name: str, params: Sequence[Params]) -> list[Any]:
        """Run ``name`` once per parameter set, all at once: per set, its result set or its error."""
        return await execute_all(self._session, self._prepared[name], list(params))

    async def _every(self, name: str, params: Sequence[Params]) -> list[Any]:
        """Like ``_each``, but raises the first error (in the order of ``params``) once all answered."""
        outcomes = await self._each(name, params)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return outcomes
