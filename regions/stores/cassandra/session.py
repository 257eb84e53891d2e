"""Cassandra adapter: one session per process, connected in the background when Cassandra is not
there yet; idempotent migrations; awaitable statements."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Generic, TypeVar

from cassandra import ConsistencyLevel, DriverException
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import (
    EXEC_PROFILE_DEFAULT,
    Cluster,
    ExecutionProfile,
    NoHostAvailable,
    ResponseFuture,
    Session,
)
from cassandra.connection import ConnectionException
from cassandra.policies import DCAwareRoundRobinPolicy, ExponentialReconnectionPolicy, HostStateListener

from regions.runtime.logs import ThrottledLog
from regions.runtime.settings import CassandraSettings
from schema.resources import cql_migrations

log = logging.getLogger(__name__)
T = TypeVar("T")


class CassandraUnavailable(Exception):
    """Cassandra cannot be used (yet): not connected since start, or no node answers. The message
    is for whoever made the call: what is missing and what to do."""


# What a call to Cassandra raises when it is down, slow, unreachable or not connected yet.
CASSANDRA_ERRORS: tuple[type[Exception], ...] = (
    CassandraUnavailable, NoHostAvailable, DriverException, ConnectionException, OSError,
)  # fmt: skip


class ConnectionState(StrEnum):
    CONNECTING = "connecting"  # never connected since start
    UP = "up"
    DOWN = "down"  # connected before; the driver sees no live node now


def keyspace_replication(cassandra: CassandraSettings) -> dict[str, str | int]:
    """The keyspace's replication: one data center per region (NetworkTopologyStrategy), so each
    region reads and writes its own replicas at LOCAL_* consistency while the keyspace, the board
    catalog with it, is one for every region. Without ``datacenters``: the local one alone."""
    replicas = cassandra.datacenters or {cassandra.local_dc: cassandra.replication_factor}
    return {"class": "NetworkTopologyStrategy", **dict(sorted(replicas.items()))}


def connect(cassandra: CassandraSettings, *, keyspace: bool = True) -> tuple[Cluster, Session]:
    """Open a cluster connection; with ``keyspace`` the session uses the configured keyspace.

    Requests go to the local data center at LOCAL_QUORUM, and conditional writes (lifecycle, results) run
    Paxos there (LOCAL_SERIAL): a region never waits on another one. The catalog's creations ask for
    SERIAL themselves (see ``cassandra_catalog``)."""
    profile = ExecutionProfile(
        load_balancing_policy=DCAwareRoundRobinPolicy(local_dc=cassandra.local_dc),
        request_timeout=cassandra.request_timeout_s,
        consistency_level=ConsistencyLevel.LOCAL_QUORUM,
        serial_consistency_level=ConsistencyLevel.LOCAL_SERIAL,
    )
    cluster = Cluster(
        contact_points=cassandra.contact_points,
        port=cassandra.port,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
        auth_provider=(
            PlainTextAuthProvider(cassandra.username, cassandra.password.get_secret_value())
            if cassandra.username
            else None
        ),
        protocol_version=5,
        # Reconnect within seconds after an outage (the driver's default backs off to 10 minutes).
        reconnection_policy=ExponentialReconnectionPolicy(base_delay=0.5, max_delay=5.0),
        connect_timeout=cassandra.request_timeout_s,
        # A node that went silent is noticed (and readiness says so) within seconds, not half a minute.
        idle_heartbeat_interval=5,
    )
    try:
        return cluster, cluster.connect(cassandra.keyspace if keyspace else None)
    except BaseException:
        cluster.shutdown()  # its control connection and reconnection threads
        raise


def describe(cassandra: CassandraSettings) -> str:
    """Where Cassandra is expected, for messages: ``host:port[,host:port] keyspace k``."""
    hosts = ",".join(f"{host}:{cassandra.port}" for host in cassandra.contact_points)
    return f"{hosts} keyspace {cassandra.keyspace}"


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


class CassandraConnection(Generic[T]):
    """A process's Cassandra session and the adapter built on it (``build`` prepares its statements).

    ``run`` connects, retrying with backoff while Cassandra is not there, so a process can start
    during an outage; until it is connected, ``adapter`` raises ``CassandraUnavailable``. Once
    connected, the driver reconnects by itself after later outages, and the ``when_up`` callbacks
    run on the event loop at once and whenever a node comes (back) up. A session opened elsewhere
    (``owns_session=False``, e.g. one shared by tests) is used but never shut down.
    """

    def __init__(
        self,
        open_session: Callable[[], Session],
        build: Callable[[Session], T],
        *,
        where: str,
        owns_session: bool = True,
        retry_max_s: float = 5.0,
    ) -> None:
        self._open_session = open_session
        self._build = build
        self._where = where  # for log lines
        self._owns_session = owns_session
        self._retry_max_s = retry_max_s
        self._session: Session | None = None
        self._adapter: T | None = None
        self._on_up: list[Callable[[], None]] = []
        self._listener: _NodesUp | None = None
        self._log = ThrottledLog(log, interval_s=30)
        self.connected = asyncio.Event()

    @classmethod
    def to(cls, cassandra: CassandraSettings, build: Callable[[Session], T]) -> CassandraConnection[T]:
        """A connection of its own to the configured Cassandra."""
        return cls(lambda: connect(cassandra)[1], build, where=describe(cassandra))

    @property
    def adapter(self) -> T:
        if self._adapter is None:
            raise CassandraUnavailable(
                "Cassandra is not reachable yet (still trying to connect); retry later"
            )
        return self._adapter

    def state(self) -> ConnectionState:
        if self._session is None:
            return ConnectionState.CONNECTING
        up = any(host.is_up for host in self._session.cluster.metadata.all_hosts())
        return ConnectionState.UP if up else ConnectionState.DOWN

    def reachable(self) -> bool:
        """Connected, and the driver holds at least one node up."""
        return self.state() is ConnectionState.UP

    def when_up(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` on the event loop once connected and whenever a node comes back up."""
        self._on_up.append(callback)

    def _nodes_up(self) -> None:
        for callback in self._on_up:
            callback()

    def _open(self) -> tuple[Session, T]:
        session = self._open_session()
        try:
            return session, self._build(session)
        except BaseException:
            if self._owns_session:
                session.cluster.shutdown()  # its control connection and reconnection threads
            raise

    async def run(self) -> None:
        """Connect and build the adapter, retrying until Cassandra answers; returns once connected."""
        delay = 0.5
        while True:
            try:
                session, adapter = await asyncio.to_thread(self._open)
            except Exception as exc:
                self._log.log(logging.WARNING, "connect", "Cassandra at %s is not reachable (%s); still trying",
                              self._where, _short(exc))  # fmt: skip
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._retry_max_s)
                continue
            self._session, self._adapter = session, adapter
            self._listener = _NodesUp(asyncio.get_running_loop(), self._nodes_up)
            session.cluster.register_listener(self._listener)
            self.connected.set()
            self._nodes_up()
            log.info("connected to Cassandra at %s", self._where)
            return

    async def close(self) -> None:
        """Stop listening to the driver and shut the session down if this connection opened it."""
        session = self._session
        if session is None:
            return
        if self._listener is not None:
            session.cluster.unregister_listener(self._listener)
        if self._owns_session:
            await asyncio.to_thread(session.cluster.shutdown)


def _short(exc: BaseException) -> str:
    """The driver's errors can be pages long (one line per host and attempt)."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 200 else text[:197] + "..."


def apply_migrations(cassandra: CassandraSettings) -> list[str]:
    """Create the keyspace and apply every migration not yet recorded; returns those applied."""
    cluster, session = connect(cassandra, keyspace=False)
    try:
        replication = ", ".join(f"'{k}': {v!r}" for k, v in keyspace_replication(cassandra).items())
        session.execute(
            f"CREATE KEYSPACE IF NOT EXISTS {cassandra.keyspace} WITH replication = {{{replication}}}"
        )
        session.set_keyspace(cassandra.keyspace)
        session.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version int PRIMARY KEY, name text, applied_at timestamp)"
        )
        done = {row.version for row in session.execute("SELECT version FROM schema_migrations")}
        applied = []
        for migration in cql_migrations():
            if migration.version in done:
                continue
            for statement in migration.statements:
                session.execute(statement)
            session.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) "
                "VALUES (%s, %s, toTimestamp(now()))",
                (migration.version, migration.name),
            )
            applied.append(f"{migration.version:03d}_{migration.name}")
        return applied
    finally:
        cluster.shutdown()


async def execute(session: Session, statement: Any, params: Any = None, *, paging_state: bytes | None = None) -> Any:
    """Run a statement without blocking the event loop; returns the driver's result set (from
    ``paging_state`` on: the page after the one that answered it)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    response: ResponseFuture = session.execute_async(statement, params, paging_state=paging_state)

    def _done(result: Any) -> None:
        if not future.done():
            future.set_result(result)

    def _failed(exc: BaseException) -> None:
        if not future.done():
            future.set_exception(exc)

    response.add_callbacks(
        lambda rows: loop.call_soon_threadsafe(_done, response.result()),
        lambda exc: loop.call_soon_threadsafe(_failed, exc),
    )
    return await future


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def execute_all(session: Session, statement: Any, params: list[Any]) -> list[Any]:
    """Run one statement for many parameter sets at once; each slot holds a result set or the
    exception it raised. The event loop is woken once for the whole group, not once per row."""
    return await execute_each(session, [(statement, values) for values in params])


async def execute_each(session: Session, calls: list[tuple[Any, Any]]) -> list[Any]:
    """Run many (statement, parameters) at once, like ``execute_all``; the parameters of a bound
    statement or a batch are None."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    results: list[Any] = [None] * len(calls)
    remaining = [len(calls)]
    lock = threading.Lock()

    def finish(slot: int, value: Any) -> None:
        results[slot] = value
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            loop.call_soon_threadsafe(_resolve, done)

    for slot, (statement, values) in enumerate(calls):
        try:
            response = session.execute_async(statement, values)
        except Exception as exc:  # the driver may refuse at once (e.g. no host); the slot records it
            finish(slot, exc)
            continue
        response.add_callbacks(
            lambda _rows, slot=slot, response=response: finish(slot, response.result()),
            lambda exc, slot=slot: finish(slot, exc),
        )
    if calls:
        await done
    return results
