"""``python -m regions.lifecycle``: this region's part in closing boards (see ``loop``)."""

from __future__ import annotations

import asyncio
import contextlib

from aiokafka.errors import KafkaError
from cassandra.cluster import Session
from redis.exceptions import RedisError

from regions.actions.erase_rows import PlayerStores
from regions.lifecycle.loop import LifecycleStores, LifecycleWorker
from regions.runtime.health import Health, serve_health
from regions.runtime.settings import load_settings
from regions.runtime.worker import run_process, run_until_stopped
from regions.stores.cassandra.corrections import CassandraCorrections
from regions.stores.cassandra.erasures import CassandraErasures
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.moderation import CassandraModeration
from regions.stores.cassandra.periods import CassandraPeriods
from regions.stores.cassandra.results import CassandraResults
from regions.stores.cassandra.session import CASSANDRA_ERRORS, CassandraConnection
from regions.stores.redis.projection import connect_redis


def _adapters(session: Session) -> LifecycleStores:
    return LifecycleStores(CassandraLifecycle(session), CassandraResults(session), CassandraCorrections(session),
                           CassandraPeriods(session), CassandraModeration(session), CassandraErasures(session),
                           PlayerStores.on(session))  # fmt: skip


async def amain() -> None:
    settings = load_settings()
    health = Health("lifecycle")
    cassandra = CassandraConnection.to(settings.cassandra, _adapters)
    connecting = asyncio.create_task(cassandra.run())
    redis = connect_redis(settings.redis)
    worker = LifecycleWorker(settings, cassandra, redis)
    health.checks["cassandra"] = cassandra.reachable
    health.checks["running"] = worker.running.is_set
    await serve_health(health, settings.intake.host, settings.lifecycle.health_port)
    try:
        await cassandra.connected.wait()
        await run_until_stopped("lifecycle", worker.run, (KafkaError, RedisError, *CASSANDRA_ERRORS))
    finally:
        connecting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await connecting
        await cassandra.close()
        await redis.aclose()


def main() -> None:
    run_process("lifecycle", amain())


if __name__ == "__main__":
    main()
