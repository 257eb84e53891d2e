"""The gateway's Cassandra stores (board catalog, profiles, archived results), opened in the
background: the gateway starts and serves Redis reads while Cassandra is down, its stores answer
:class:`StoreUnavailable` until the first connection, and the driver reconnects after an outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from cassandra import DriverException
from cassandra.cluster import NoHostAvailable, Session
from cassandra.connection import ConnectionException
from cassandra.policies import HostStateListener

from gateway.cassandra_profiles import CassandraProfiles
from regions.cassandra_catalog import CassandraCatalog
from regions.cassandra_lifecycle import CassandraLifecycle
from regions.cassandra_results import CassandraResults
from regions.cassandra_store import connect
from regions.settings import CassandraSettings

log = logging.getLogger(__name__)


class StoreUnavailable(Exception):
    """A store the operation needs cannot be reached now; the message says which and what to do."""


# What a store call raises when Cassandra is down, slow, unreachable or not connected yet.
STORE_ERRORS: tuple[type[Exception], ...] = (
    StoreUnavailable, NoHostAvailable, DriverException, ConnectionException, OSError,
)  # fmt: skip


class StoreState(StrEnum):
    CONNECTING = "connecting"  # never connected since start
    UP = "up"
    DOWN = "down"  # connected before; the driver sees no live node now


@dataclass(frozen=True, slots=True)
class Stores:
    catalog: CassandraCatalog
    profiles: CassandraProfiles
    results: CassandraResults
    lifecycle: CassandraLifecycle


def open_stores(session: Session) -> Stores:
    """Prepare every statement; blocks, so it runs in a worker thread."""
    return Stores(CassandraCatalog(session), CassandraProfiles(session), CassandraResults(session),
                  CassandraLifecycle(session))  # fmt: skip


class _NodesUp(HostStateListener):  # type: ignore[misc]  # the driver is untyped
    """Tells the event loop when the driver sees a Cassandra node come (back) up."""

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
        self._loop, self._callback = loop, callback

    def on_up(self, host: object) -> None:
        self._loop.call_soon_threadsafe(self._callback)

    def on_add(self, host: object) -> None:
        self._loop.call_soon_threadsafe(self._callback)

    def on_down(self, host: object) -> None:
        pass

    def on_remove(self, host: object) -> None:
        pass


class CassandraLink:
    """Connects in the background, retrying with backoff, then holds the session for the process."""

    def __init__(self, open_session: Callable[[], Session], owns_session: bool = True) -> None:
        self._open_session = open_session
        self._owns_session = owns_session
        self._session: Session | None = None
        self._stores: Stores | None = None
        self._opened = asyncio.Event()
        self._on_up: list[Callable[[], None]] = []
        self._listener: _NodesUp | None = None

    def when_up(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` on the event loop once connected and whenever a node comes back up."""
        self._on_up.append(callback)

    def _nodes_up(self) -> None:
        for callback in self._on_up:
            callback()

    @classmethod
    def to(cls, cassandra: CassandraSettings) -> CassandraLink:
        return cls(lambda: connect(cassandra)[1])

    @property
    def stores(self) -> Stores:
        if self._stores is None:
            raise StoreUnavailable("Cassandra is not reachable yet (the gateway keeps trying); retry later")
        return self._stores

    @property
    def connected_once(self) -> bool:
        return self._stores is not None

    async def opened(self) -> Stores:
        await self._opened.wait()
        return self.stores

    def state(self) -> StoreState:
        if self._session is None:
            return StoreState.CONNECTING
        up = any(host.is_up for host in self._session.cluster.metadata.all_hosts())
        return StoreState.UP if up else StoreState.DOWN

    async def run(self, retry_max_s: float = 5.0) -> None:
        """Connect and prepare the stores, retrying until it works; then return."""
        delay = 0.5
        while True:
            try:
                session = await asyncio.to_thread(self._open_session)
            except STORE_ERRORS as exc:
                log.warning("Cassandra is not reachable (%s); retrying in %.1fs", _short(exc), delay)
            else:
                try:
                    self._stores = await asyncio.to_thread(open_stores, session)
                except STORE_ERRORS as exc:
                    log.warning("preparing the Cassandra statements failed (%s); retrying", _short(exc))
                    await self._shutdown(session)
                else:
                    self._session = session
                    self._listener = _NodesUp(asyncio.get_running_loop(), self._nodes_up)
                    session.cluster.register_listener(self._listener)
                    self._opened.set()
                    self._nodes_up()
                    log.info("connected to Cassandra")
                    return
            await asyncio.sleep(delay)
            delay = min(delay * 2, retry_max_s)

    async def close(self) -> None:
        if self._session is not None:
            if self._listener is not None:
                self._session.cluster.unregister_listener(self._listener)
            await self._shutdown(self._session)

    async def _shutdown(self, session: Session) -> None:
        if self._owns_session:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(session.cluster.shutdown)


def _short(exc: BaseException) -> str:
    """The driver's errors can be pages long (one line per host and attempt)."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 200 else text[:197] + "..."
