"""Several whole regions for one test, linked through proxies that a test can black-hole.

Each region of the list runs on the session's servers of that name (``tests.clusters``: a Kafka
cluster and a Redis of its own; the same key prefix in every region, so a HOME read reaches another
region's projection by URL exactly as across machines) and runs its own processes, a replicator
from every other region, and on request a gateway. The Cassandra keyspace is the test's, shared
(the board catalog is global; locally one data center serves every region).

Every link between regions goes through a proxy and nothing else does: the other regions'
replicators reach a region's Kafka through the proxy in front of its broker's second listener (which
advertises the proxy, so metadata never leads around it), and HOME reads reach a region's Redis
through a proxy of its own. ``Deployment.cut`` black-holes the links into the regions named, a
silent partition: no connection is refused or reset, nothing passes. The regions' own processes
talk to their own servers directly and never notice.

``Oracle`` records the awards the intakes acknowledged (202); ``problems`` names every way a
region's projection differs from the fold of those awards.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from cassandra.cluster import Session
from redis.asyncio import Redis

from regions.core.freshness import FreshnessRule, RegionStatus
from regions.core.reads import AsOf
from regions.runtime.settings import RegionEndpoint, Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.redis.projection import RedisProjection, connect_redis
from regions.stores.redis.reads import RankReader
from tests.clusters import RegionServerPool, RegionServers, ReplicatorProcess, Replicators, bootstrap_topics
from tests.e2e.gateway.conftest import GatewayProcess, start_gateway
from tests.harness import SERVICES, Region, delete_topics, points, with_free_ports
from tests.proxy import TcpProxy

STALE_AFTER_S = 5.0  # threshold of the freshness rule (the setting's default)


class Oracle:
    """The awards the intakes acknowledged (202), by event id, and where each intake put them."""

    def __init__(self) -> None:
        self.amounts: dict[str, tuple[str, int]] = {}  # event id -> (user, amount)
        self.acked: dict[tuple[str, int], int] = {}  # (accepting region, partition) -> highest offset
        self.acks = 0

    async def send(self, region: Region, board: str, user: str, match: str, amount: int) -> None:
        payload = points(board, match, user, amount)
        response = None
        for _ in range(5):  # an unknown outcome is retried with the same award, as a game service does
            with contextlib.suppress(httpx.TransportError):  # no answer (a busy machine): unknown too
                response = await region.client.send(payload)
                if response.status_code < 500:
                    break
        assert response is not None and response.status_code == 202, response and response.text
        for ack in response.json()["accepted"]:
            self.acks += 1
            self.amounts[ack["eventId"]] = (user, amount)
            key = (ack["region"], ack["partition"])
            self.acked[key] = max(self.acked.get(key, -1), ack["offset"])

    async def send_all(self, region: Region, awards: list[dict[str, Any]]) -> None:
        """Awards (``points``) acknowledged by ``region``'s intake in batches of 100."""
        for at in range(0, len(awards), 100):
            response = await region.client.send({"awards": awards[at : at + 100]})
            assert response.status_code == 202, response.text
            for award, accepted in zip(awards[at : at + 100], response.json()["accepted"], strict=True):
                self.acks += 1
                self.amounts[accepted["eventId"]] = (award["userId"], award["delta"])
                key = (accepted["region"], accepted["partition"])
                self.acked[key] = max(self.acked.get(key, -1), accepted["offset"])

    def totals(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for user, amount in self.amounts.values():
            found[user] = found.get(user, 0) + amount
        return found


async def problems(region: Region, board: str, oracle: Oracle) -> list[str]:
    """How ``region``'s projection differs from the oracle (totals and positions); empty: converged."""
    found = []
    for user, total in sorted(oracle.totals().items()):
        got = await region.total_of(board, user)
        if got != total:
            found.append(f"{region.settings.region}: {user} has {got}, the oracle {total}")
    positions = (await region.projection.positions()).offsets
    found += [
        f"{region.settings.region}: asOf {key} is {positions.get(key)}, acknowledged {offset}"
        for key, offset in sorted(oracle.acked.items())
        if positions.get(key, -1) < offset
    ]
    return found


def status(as_of: AsOf, region: str) -> RegionStatus:
    return next(s for s in as_of.regions if s.region == region)


async def audited(session: Session, board: str, oracle: Oracle) -> bool:
    """The board's audit history is exactly one row per distinct acknowledged award, with its amount."""
    rows = session.execute(
        "SELECT event_id, amount FROM award_history WHERE board_id = %s ALLOW FILTERING", (board,)
    )
    return {r.event_id: r.amount for r in rows} == {e: a for e, (_, a) in oracle.amounts.items()}


@dataclass
class Deployment:
    regions: dict[str, Region]
    readers: dict[str, RankReader]
    kafka_links: dict[str, TcpProxy]  # in front of each region's Kafka, for the other regions
    redis_links: dict[str, TcpProxy]  # in front of each region's Redis, for HOME reads
    replicators: dict[tuple[str, str], ReplicatorProcess] = field(default_factory=dict)  # (into, from)
    gateways: dict[str, GatewayProcess] = field(default_factory=dict)
    matches: itertools.count[int] = field(default_factory=itertools.count)

    def cut(self, *names: str) -> float:
        """Black-hole every link into the regions ``names``; the time (s) from which nothing passes."""
        for name in names:
            self.kafka_links[name].blackhole()
            self.redis_links[name].blackhole()
        return time.time()

    def heal(self) -> None:
        for link in (*self.kafka_links.values(), *self.redis_links.values()):
            link.heal()

    async def flow(self, oracle: Oracle, board: str, rounds: int, users: Sequence[str]) -> None:
        """Awards into every region in turn; every fifth is sent again to the next region (a retry in
        another region: one event, acknowledged twice)."""
        names = list(self.regions)
        for _ in range(rounds):
            n = next(self.matches)
            user, amount = users[n % len(users)], 1 + n % 7
            first, second = self.regions[names[n % len(names)]], self.regions[names[(n + 1) % len(names)]]
            await oracle.send(first, board, user, f"m{n}", amount)
            if n % 5 == 0:
                await oracle.send(second, board, user, f"m{n}", amount)

    async def problems(self, board: str, oracle: Oracle) -> list[str]:
        found = []
        for region in self.regions.values():
            found += await problems(region, board, oracle)
        return found

    async def converged(self, board: str, oracle: Oracle) -> bool:
        return not await self.problems(board, oracle)


Deploy = Callable[..., Awaitable[Deployment]]


def _region_settings(base: Settings, name: str, servers: RegionServers, tmp_path: Path) -> Settings:
    store = base.processor.model_copy(update={"store_dir": str(tmp_path / f"state-{name}")})
    return with_free_ports(base.model_copy(update={
        "region": name,
        "kafka": base.kafka.model_copy(update={"bootstrap_servers": servers.bootstrap_servers}),
        "redis": base.redis.model_copy(update={"url": servers.redis_url}),
        "processor": store,
    }))  # fmt: skip


@contextlib.asynccontextmanager
async def deployments(
    settings: Settings,
    region_servers: RegionServerPool,
    replicators: Replicators,
    cassandra_session: Session,
    tmp_path: Path,
) -> AsyncIterator[Deploy]:
    """Start regions ``names`` (see the module's docstring): in each the ``services`` (none: the test
    starts what it needs), with ``replicate`` a replicator from every other region, in each region of
    ``gateways_in`` a gateway (its answer cache off, so every read reaches a projection), and ``env``
    over every region's settings. Everything stops at the end (a test's, or a module's whose tests
    share the regions)."""
    started: list[Deployment] = []
    clients: list[Redis] = []
    gateways = contextlib.AsyncExitStack()

    async def start(
        names: Sequence[str],
        *,
        services: Sequence[str] = SERVICES,
        replicate: bool = True,
        gateways_in: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> Deployment:
        servers = dict(zip(names, await region_servers.get(*names), strict=True))
        kafka_links = {n: await s.proxy() for n, s in servers.items()}
        redis_links = {n: await s.redis_proxy() for n, s in servers.items()}
        endpoints = {
            n: RegionEndpoint(kafka_bootstrap_servers=s.proxied_bootstrap_servers,
                              redis_url=f"redis://127.0.0.1:{redis_links[n].port}/0")
            for n, s in servers.items()
        }  # fmt: skip
        base = settings.model_copy(update={"regions": endpoints})
        each = [_region_settings(base, n, s, tmp_path) for n, s in servers.items()]
        await bootstrap_topics(*each)
        regions, readers = {}, {}
        rule = FreshnessRule(tuple(sorted(names)), settings.kafka.partitions, STALE_AFTER_S)
        for s in each:
            client = connect_redis(s.redis)
            clients.append(client)
            (tmp_path / s.region).mkdir()
            projection = RedisProjection(client, s.redis.key_prefix)
            regions[s.region] = region = Region(s, CassandraCatalog(cassandra_session), projection,
                                                tmp_path / s.region)  # fmt: skip
            region.env.update(env or {})
            readers[s.region] = RankReader(projection, s.redis.key_prefix, s.region, rule)
        deployment = Deployment(regions, readers, kafka_links, redis_links)
        started.append(deployment)
        if services:
            await asyncio.gather(*(r.start(*services) for r in regions.values()))
        if replicate:
            pairs = [(local, source) for local in names for source in names if source != local]
            processes = await asyncio.gather(
                *(replicators(regions[into].settings, src) for into, src in pairs)
            )
            deployment.replicators = dict(zip(pairs, processes, strict=True))
        for name in gateways_in:
            log = tmp_path / name / "gateway.log"
            gateway = start_gateway(regions[name].env, log, LB_GATEWAY__TOP_CACHE_TTL_S="0")
            deployment.gateways[name] = await gateways.enter_async_context(gateway)
        return deployment

    try:
        yield start
    finally:
        await gateways.aclose()
        for deployment in started:
            for replicator in deployment.replicators.values():  # before their links close under them
                await replicator.stop()
            for region in deployment.regions.values():
                for service in region.processes:
                    print(f"---- {region.settings.region} {service} log tail\n{region.tail(service)}")
                await region.close()
            for link in (*deployment.kafka_links.values(), *deployment.redis_links.values()):
                await link.close()
            for region in deployment.regions.values():
                await delete_topics(region.settings.kafka, f"{region.settings.kafka.topic_prefix}.")
        for client in clients:
            async for key in client.scan_iter(match=f"{settings.redis.key_prefix}:*", count=1000):
                await client.delete(key)
            await client.aclose()


@pytest.fixture
async def deploy(
    settings: Settings,
    region_servers: RegionServerPool,
    replicators: Replicators,
    cassandra_session: Session,
    tmp_path: Path,
) -> AsyncIterator[Deploy]:
    """``deployments`` for one test: everything stops at its end."""
    async with deployments(settings, region_servers, replicators, cassandra_session, tmp_path) as start:
        yield start
