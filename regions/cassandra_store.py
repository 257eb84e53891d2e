"""Cassandra adapter: one session per process, idempotent migrations, and awaitable statements."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

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
