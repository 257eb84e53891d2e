"""Cassandra adapter: one session per process, connected in the background when Cassandra is not
there yet; idempotent migrations; awaitable statements."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from cassandra import ConsistencyLevel
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, ResponseFuture, Session
from cassandra.policies import DCAwareRoundRobinPolicy, ExponentialReconnectionPolicy

from regions.settings import CassandraSettings
from regions.throttled_log import ThrottledLog
from schema.resources import cql_migrations

log = logging.getLogger(__name__)
T = TypeVar("T")


class CassandraUnavailable(Exception):
    """Cassandra cannot be used (yet): not connected since start, or no node answers."""


def keyspace_replication(cassandra: CassandraSettings) -> dict[str, str | int]:
    """The keyspace's replication: one data center per region (NetworkTopologyStrategy), so each
    region reads and writes its own replicas at LOCAL_* consistency while the keyspace, the board
    catalog with it, is one for every region. Without ``datacenters``: the local one alone."""
    replicas = cassandra.datacenters or {cassandra.local_dc: cassandra.replication_factor}
    return {"class": "NetworkTopologyStrategy", **dict(sorted(replicas.items()))}


def connect(cassandra: CassandraSettings, *, keyspace: bool = True) -> tuple[Cluster, Session]:
    """Open a cluster connection; with ``keyspace`` the session uses the configured keyspace.

    Requests go to the local data center at LOCAL_QUORUM, and conditional writes (audit rows) run
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


class CassandraConnection(Generic[T]):
    """A process's Cassandra session and the adapter built on it (``build`` prepares its statements).

    ``run`` connects, retrying with backoff while Cassandra is not there, so a process can start
    during an outage; until it is connected, ``adapter`` raises ``CassandraUnavailable``. Once
    connected, the driver reconnects by itself after later outages.
    """

    def __init__(
        self, cassandra: CassandraSettings, build: Callable[[Session], T], retry_max_s: float = 5.0
    ) -> None:
        self._cassandra = cassandra
        self._build = build
        self._retry_max_s = retry_max_s
        self._cluster: Cluster | None = None
        self._adapter: T | None = None
        self._log = ThrottledLog(log, interval_s=30)
        self.connected = asyncio.Event()

    @property
    def adapter(self) -> T:
        if self._adapter is None:
            raise CassandraUnavailable(f"not connected to Cassandra at {describe(self._cassandra)} yet")
        return self._adapter

    def reachable(self) -> bool:
        """Connected, and the driver holds at least one node up."""
        cluster = self._cluster
        return cluster is not None and any(host.is_up for host in cluster.metadata.all_hosts())

    def _open(self) -> tuple[Cluster, T]:
        cluster, session = connect(self._cassandra)
        try:
            return cluster, self._build(session)
        except BaseException:
            cluster.shutdown()
            raise

    async def run(self) -> None:
        """Connect, retrying until Cassandra answers; returns once connected."""
        delay = 0.5
        while self._adapter is None:
            try:
                self._cluster, self._adapter = await asyncio.to_thread(self._open)
            except Exception as exc:
                self._log.log(
                    logging.WARNING, "connect", "Cassandra at %s is not reachable (%r); still trying",
                    describe(self._cassandra), exc,
                )  # fmt: skip
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._retry_max_s)
        self.connected.set()
        log.info("connected to Cassandra at %s", describe(self._cassandra))

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster.shutdown()


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


async def execute(session: Session, statement: Any, params: Any = None) -> Any:
    """Run a statement without blocking the event loop; returns the driver's result set."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    response: ResponseFuture = session.execute_async(statement, params)

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
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    results: list[Any] = [None] * len(params)
    remaining = [len(params)]
    lock = threading.Lock()

    def finish(slot: int, value: Any) -> None:
        results[slot] = value
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            loop.call_soon_threadsafe(_resolve, done)

    for slot, values in enumerate(params):
        try:
            response = session.execute_async(statement, values)
        except Exception as exc:  # the driver may refuse at once (e.g. no host); the slot records it
            finish(slot, exc)
            continue
        response.add_callbacks(
            lambda _rows, slot=slot, response=response: finish(slot, response.result()),
            lambda exc, slot=slot: finish(slot, exc),
        )
    if params:
        await done
    return results
