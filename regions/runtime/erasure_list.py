"""The erasure list as the intakes and the audit sinks hold it: the tokens of every erased player
(``schema.erasure.erasure_token``), kept by the rules of ``regions.core.erasure_changes``.

It is read whole once, at start (``loaded``: the erasures table and every lane of the change log
from its beginning), then every ``intake.erasure_refresh_s`` only each lane's entries after the last
one taken: a refresh costs a read per lane, however long the list. A read that fails keeps the list
it has and is tried again; a lane whose next entry has not reached this data center yet, while later
ones have, waits for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

from regions.core.erasure_changes import ErasureChange, ErasureListState, page_of
from regions.runtime.logs import ThrottledLog
from schema.erasure import erasure_token

log = logging.getLogger(__name__)
READ_ROWS = 1000  # change log entries per read


class ChangeLog(Protocol):
    async def lanes(self) -> list[str]: ...

    async def read(self, lane: str, sequence: int, limit: int) -> list[ErasureChange]: ...


class ErasureSource(Protocol):
    """Where the list is read from (``regions.stores.cassandra.erasures.CassandraErasures``)."""

    @property
    def log(self) -> ChangeLog: ...

    def states(self) -> AsyncIterator[list[tuple[str, int, bool]]]: ...


class ErasureList:
    def __init__(self, source: Callable[[], ErasureSource], interval_s: float) -> None:
        self._source, self._interval_s = source, interval_s
        self._state = ErasureListState()
        self.loaded = asyncio.Event()
        self._errors = ThrottledLog(log, interval_s=60)

    @property
    def ready(self) -> bool:
        """Read whole once: until then no player is known to be erased."""
        return self.loaded.is_set()

    def has(self, user_id: str) -> bool:
        return bool(self._state.erased) and erasure_token(user_id) in self._state.erased

    async def run(self) -> None:
        """Read the list whole now, then its changes every interval, until cancelled."""
        while True:
            try:
                await self.refresh()
            except Exception as exc:  # Cassandra away: the list read last stays
                self._errors.log(logging.WARNING, "erasures", "erasure list not read (%r); keeping %d tokens",
                                 exc, len(self._state.erased))  # fmt: skip
            await asyncio.sleep(self._interval_s)

    async def refresh(self) -> None:
        """One read: whole the first time (into a new state, so a failure leaves nothing half
        read), then each lane's new entries."""
        source = self._source()
        if self.ready:
            for lane in await source.log.lanes():
                await self._read_lane(source.log, self._state, lane)
            return
        state = ErasureListState()
        async for page in source.states():
            state.take_all(page)
        for lane in await source.log.lanes():
            await self._read_lane(source.log, state, lane)
        self._state = state
        self.loaded.set()
        log.info("erasure list read: %d players erased", len(state.erased))

    async def _read_lane(self, source: ChangeLog, state: ErasureListState, lane: str) -> None:
        """Take the lane's entries after its cursor, partition after partition, up to its end or
        the first missing entry."""
        while True:
            cursor = state.cursor(lane)
            changes = await source.read(lane, cursor, READ_ROWS)
            taken = state.advance(lane, changes)
            if taken < len(changes):
                self._errors.log(logging.WARNING, f"gap:{lane}", "erasure change log %s: entry %d is not in this "
                                 "data center yet while later ones are; waiting for it", lane, state.cursor(lane))  # fmt: skip
                return
            if not taken or (taken < READ_ROWS and page_of(state.cursor(lane)) == page_of(cursor)):
                return


async def after(ready: asyncio.Event, work: Callable[[], Awaitable[None]]) -> None:
    """Run ``work`` once ``ready`` is set (the erasure list once Cassandra is connected)."""
    await ready.wait()
    await work()
