"""Opening and closing what the gateway talks to: Redis, Cassandra and the hints feed."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from cassandra.cluster import Session
from redis.asyncio import BlockingConnectionPool, Redis

from gateway.boards import BoardDirectory
from gateway.cassandra_profiles import CassandraProfiles
from gateway.cassandra_results import CassandraResults
from gateway.core.breaker import CircuitBreaker
from gateway.core.limits import ReadLimits
from gateway.hub import HintHub
from gateway.profiles import GuardedProfiles
from gateway.projections import Projections
from gateway.redis_snapshot import SnapshotReader
from gateway.services import Services
from regions.cassandra_catalog import CassandraCatalog
from regions.cassandra_store import connect
from regions.redis_projection import RedisProjection
from regions.redis_reads import RankReader
from regions.settings import Settings


def gateway_redis(settings: Settings) -> Redis:
    """A client whose pool waits for a free connection (bounded) instead of failing under bursts."""
    pool = BlockingConnectionPool.from_url(
        settings.redis.url,
        decode_responses=True,
        max_connections=settings.gateway.redis_max_connections,
        timeout=5,
    )
    return Redis(connection_pool=pool)


def build_services(settings: Settings, redis: Redis, session: Session) -> Services:
    """Wire the services; it prepares CQL statements, which blocks: call it in a worker thread."""
    gw, prefix = settings.gateway, settings.redis.key_prefix
    reader = RankReader(RedisProjection(redis, prefix), prefix, settings.region)
    store = CassandraProfiles(session)
    projections = Projections(settings.region, reader, gw.top_cache_ttl_s)
    return Services(
        settings=settings,
        boards=BoardDirectory(CassandraCatalog(session), gw.board_cache_ttl_s),
        projections=projections,
        profiles=GuardedProfiles(
            store,
            gw.profile_timeout_s,
            CircuitBreaker(gw.profile_breaker_failures, gw.profile_breaker_reset_s),
        ),
        hub=HintHub(redis, prefix, SnapshotReader(reader), gw, projections.changed),
        results=CassandraResults(session),
        limits=ReadLimits(gw.max_top_k, gw.max_context_range),
    )


@contextlib.asynccontextmanager
async def running(services: Services) -> AsyncIterator[Services]:
    """Run the hints feed while the services are in use."""
    feed = asyncio.create_task(services.hub.run(), name="hints-feed")
    try:
        yield services
    finally:
        feed.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await feed
        await services.boards.close()


@contextlib.asynccontextmanager
async def open_services(settings: Settings) -> AsyncIterator[Services]:
    redis = gateway_redis(settings)
    cluster, session = await asyncio.to_thread(connect, settings.cassandra)
    try:
        services = await asyncio.to_thread(build_services, settings, redis, session)
        async with running(services):
            yield services
    finally:
        await redis.aclose()
        await asyncio.to_thread(cluster.shutdown)
