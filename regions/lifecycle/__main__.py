"""``python -m regions.lifecycle``: this region's part in closing boards (see ``loop``)."""

from __future__ import annotations

import asyncio
import contextlib

from aiokafka.errors import KafkaError
from cassandra.cluster import Session
from redis.exceptions import RedisError

from regions.cassandra_corrections import CassandraCorrections
from regions.cassandra_lifecycle import CassandraLifecycle
from regions.cassandra_periods import CassandraPeriods
from regions.cassandra_results import CassandraResults
from regions.cassandra_store import CASSANDRA_ERRORS, CassandraConnection
from regions.health import Health, serve_health
from regions.lifecycle.loop import LifecycleStores, LifecycleWorker
from regions.redis_projection import connect_redis
from regions.settings import load_settings
from regions.worker import run_process, run_until_stopped


def _adapters(session: Session) -> LifecycleStores:
    return LifecycleStores(CassandraLifecycle(session), CassandraResults(session), CassandraCorrections(session),
                           CassandraPeriods(session))  # fmt: skip


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
