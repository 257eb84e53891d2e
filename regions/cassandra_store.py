"""Cassandra adapter: one session per process, idempotent migrations, and awaitable statements."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, ResponseFuture, Session
from cassandra.policies import DCAwareRoundRobinPolicy, ExponentialReconnectionPolicy

from regions.settings import CassandraSettings
from schema.resources import cql_migrations

log = logging.getLogger(__name__)


def connect(cassandra: CassandraSettings, *, keyspace: bool = True) -> tuple[Cluster, Session]:
    """Open a cluster connection; with ``keyspace`` the session uses the configured keyspace."""
    profile = ExecutionProfile(
        load_balancing_policy=DCAwareRoundRobinPolicy(local_dc=cassandra.local_dc),
        request_timeout=cassandra.request_timeout_s,
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
    )
    return cluster, cluster.connect(cassandra.keyspace if keyspace else None)


def apply_migrations(cassandra: CassandraSettings) -> list[str]:
    """Create the keyspace and apply every migration not yet recorded; returns those applied."""
    cluster, session = connect(cassandra, keyspace=False)
    try:
        session.execute(
            f"CREATE KEYSPACE IF NOT EXISTS {cassandra.keyspace} WITH replication = "
            f"{{'class': 'SimpleStrategy', 'replication_factor': {cassandra.replication_factor}}}"
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
