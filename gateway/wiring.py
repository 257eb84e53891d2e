"""Opening and closing what the gateway talks to: Redis (this region's, and the home projections of
the other regions), Cassandra and the hints feeds."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from redis.asyncio import Redis

from gateway.admission import Admission
from gateway.boards import BoardDirectory
from gateway.cassandra_stores import Stores, open_stores
from gateway.core.breaker import CircuitBreaker
from gateway.core.limits import ReadLimits
from gateway.hub import HintHub
from gateway.profiles import GuardedProfiles
from gateway.projections import Projections
from gateway.redis_snapshot import SnapshotReader
from gateway.services import Services
from regions.core.freshness import FreshnessRule
from regions.runtime.settings import Settings
from regions.stores.cassandra.session import CassandraConnection
from regions.stores.redis.connection import ProjectionRedis, connect_redis, server_pool
from regions.stores.redis.projection import RedisProjection
from regions.stores.redis.reads import RankReader


def gateway_redis(settings: Settings) -> ProjectionRedis:
    """A client whose pool waits for a free connection (bounded) instead of failing under bursts."""
    return connect_redis(
        settings.redis.url, max_connections=settings.gateway.redis_max_connections, blocking=True
    )


def home_redis(settings: Settings, url: str) -> tuple[Redis, Redis]:
    """Clients of another region's projection: one for reads, whose every wait (a connection from
    the pool, connecting, an answer) is bounded by the home timeout, and one for its hints feed,
    which waits for messages as long as it takes."""
    timeout = settings.gateway.home_timeout_s
    pool = server_pool(
        url,
        blocking=True,
        max_connections=settings.gateway.redis_max_connections,
        timeout=timeout,
        socket_connect_timeout=timeout,
        socket_timeout=timeout + 1,  # the caller gives up at the timeout; the connection soon after
    )
    feed = Redis.from_pool(server_pool(url, socket_connect_timeout=timeout))
    return Redis(connection_pool=pool), feed


@dataclass(frozen=True, slots=True)
class HomeLink:
    """Another region's projection as the gateway reaches it (HOME reads of boards homed there)."""

    region: str
    reads: Redis
    feed: Redis


def home_links(settings: Settings) -> list[HomeLink]:
    """Every other region whose projection's address the settings give."""
    links = []
    for region in settings.remote_regions():
        url = settings.regions[region].redis_url
        if url is not None:
            links.append(HomeLink(region, *home_redis(settings, url)))
    return links


def build_services(
    settings: Settings,
    redis: ProjectionRedis,
    cassandra: CassandraConnection[Stores],
    homes: Sequence[HomeLink] = (),
) -> Services:
    gw, prefix = settings.gateway, settings.redis.key_prefix
    rule = FreshnessRule(tuple(settings.region_names()), settings.kafka.partitions, gw.region_stale_after_s)

    def reader_of(region: str, client: ProjectionRedis) -> RankReader:
        return RankReader(RedisProjection(client, prefix), prefix, region, rule)

    reader = reader_of(settings.region, redis)
    home_readers = {home.region: reader_of(home.region, home.reads) for home in homes}
    projections = Projections(settings.region, reader, gw.top_cache_ttl_s, home_readers, gw.home_timeout_s)
    profiles = GuardedProfiles(
        lambda: cassandra.adapter.profiles,
        gw.profile_timeout_s,
        CircuitBreaker(gw.profile_breaker_failures, gw.profile_breaker_reset_s),
        gw.profile_cache_ttl_s,
        gw.profile_cache_entries,
    )
    cassandra.when_up(profiles.store_is_back)
    boards = BoardDirectory(lambda: cassandra.adapter.catalog, gw.board_cache_ttl_s, gw.max_unknown_boards)
    admission = Admission(gw)
    hub = HintHub(redis, prefix, SnapshotReader(reader), gw, projections.changed, on_status=boards.forget,
                  push=admission)  # fmt: skip
    hubs = {settings.region: hub} | {
        home.region: HintHub(home.feed, prefix, SnapshotReader(home_readers[home.region]), gw,
                             projections.changed, ready_within_s=gw.home_timeout_s, on_status=boards.forget,
                             push=admission)
        for home in homes
    }  # fmt: skip
    return Services(
        settings=settings,
        boards=boards,
        projection=RedisProjection(redis, prefix),
        projections=projections,
        profiles=profiles,
        hub=hub,
        hubs=hubs,
        cassandra=cassandra,
        admission=admission,
        limits=ReadLimits(gw.max_top_k, gw.max_context_range, gw.max_listed_players, gw.max_followed_players),
    )


@contextlib.asynccontextmanager
async def running(services: Services) -> AsyncIterator[Services]:
    """Run the hints feed, and connect to Cassandra in the background, while the services are in use."""
    tasks = [
        *(
            asyncio.create_task(hub.run(), name=f"hints-feed-{region}")
            for region, hub in services.hubs.items()
        ),
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
    homes = home_links(settings)
    try:
        cassandra = CassandraConnection.to(settings.cassandra, open_stores)
        async with running(build_services(settings, redis, cassandra, homes)) as services:
            yield services
    finally:
        await redis.aclose()  # and its pool: connect_redis gives each client a pool of its own
        for client in (c for home in homes for c in (home.reads, home.feed)):
            await client.aclose(close_connection_pool=True)
