"""Opening and closing what the gateway talks to: Redis, Cassandra and the hints feed."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from gateway.boards import BoardDirectory
from gateway.cassandra_stores import Stores, open_stores
from gateway.core.breaker import CircuitBreaker
from gateway.core.limits import ReadLimits
from gateway.hub import HintHub
from gateway.profiles import GuardedProfiles
from gateway.projections import Projections
from gateway.redis_snapshot import SnapshotReader
from gateway.services import Services
from regions.cassandra_store import CassandraConnection
from regions.redis_connection import ProjectionRedis, connect_redis
from regions.redis_projection import RedisProjection
from regions.redis_reads import RankReader
from regions.settings import Settings


def gateway_redis(settings: Settings) -> ProjectionRedis:
    """A client whose pool waits for a free connection (bounded) instead of failing under bursts."""
    return connect_redis(
        settings.redis.url, max_connections=settings.gateway.redis_max_connections, blocking=True
    )


def build_services(
    settings: Settings, redis: ProjectionRedis, cassandra: CassandraConnection[Stores]
) -> Services:
    gw, prefix = settings.gateway, settings.redis.key_prefix
    reader = RankReader(RedisProjection(redis, prefix), prefix, settings.region)
    projections = Projections(settings.region, reader, gw.top_cache_ttl_s)
    profiles = GuardedProfiles(
        lambda: cassandra.adapter.profiles,
        gw.profile_timeout_s,
        CircuitBreaker(gw.profile_breaker_failures, gw.profile_breaker_reset_s),
        gw.profile_cache_ttl_s,
        gw.profile_cache_entries,
    )
    cassandra.when_up(profiles.store_is_back)
    return Services(
        settings=settings,
        boards=BoardDirectory(lambda: cassandra.adapter.catalog, gw.board_cache_ttl_s, gw.max_unknown_boards),
        projections=projections,
        profiles=profiles,
        hub=HintHub(redis, prefix, SnapshotReader(reader), gw, projections.changed),
        cassandra=cassandra,
        limits=ReadLimits(gw.max_top_k, gw.max_context_range),
    )


@contextlib.asynccontextmanager
async def running(services: Services) -> AsyncIterator[Services]:
    """Run the hints feed, and connect to Cassandra in the background, while the services are in use."""
    tasks = [
        asyncio.create_task(services.hub.run(), name="hints-feed"),
        asyncio.create_task(services.cassandra.run(), name="cassandra-connect"),
    ]
    try:
        yield services
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await services.boards.close()
        await services.cassandra.close()


@contextlib.asynccontextmanager
async def open_services(settings: Settings) -> AsyncIterator[Services]:
    redis = gateway_redis(settings)
    try:
        cassandra = CassandraConnection.to(settings.cassandra, open_stores)
        async with running(build_services(settings, redis, cassandra)) as services:
            yield services
    finally:
        await redis.aclose()
