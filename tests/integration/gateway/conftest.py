"""A real gateway for each test: uvicorn in this process, on a free port, over the real servers.

Tests talk to it through real clients (httpx, gql, websockets); its Redis keys and Kafka topics are
the test's own, its Cassandra keyspace the run's.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import httpx
import msgspec
import pytest
import uvicorn
from cassandra.cluster import Session
from redis.asyncio import Redis

from gateway.app import create_app
from gateway.cassandra_stores import open_stores
from gateway.server import server_config
from gateway.services import Services
from gateway.wiring import HomeLink, build_services, running
from regions.core.boards import Board, SortOrder, TiePolicy
from regions.core.ordering import encode, reached_position
from regions.core.positions import SourcePosition
from regions.runtime.settings import Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.session import CassandraConnection
from regions.stores.redis.projection import ProjectedTotal, RedisProjection
from schema.redis_keys import board_tag, layouts_key
from tests.harness import Region, free_port


@dataclass
class Gateway:
    settings: Settings
    services: Services
    port: int
    http: httpx.AsyncClient

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/graphql"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/graphql"

    async def query(
        self, query: str, variables: dict[str, Any] | None = None, headers: dict[str, str] | None = None
    ) -> dict[str, Any]:
        response = await self.http.post(
            self.url, json={"query": query, "variables": variables or {}}, headers=headers
        )
        return cast(dict[str, Any], response.json())


@contextlib.asynccontextmanager
async def serve_gateway(
    settings: Settings, redis: Redis, session: Session | None, homes: Sequence[HomeLink] = ()
) -> AsyncIterator[Gateway]:
    """A gateway on the test's Redis client; on the shared Cassandra ``session`` (ready before the
    gateway is), or with ``session`` None on its own connection to ``settings.cassandra``, opened in
    the background as in production; ``homes``: other regions' projections it reaches."""
    port = free_port()
    settings = settings.model_copy(update={"gateway": settings.gateway.model_copy(update={"port": port})})
    opened: list[Services] = []
    link = (
        CassandraConnection.to(settings.cassandra, open_stores)
        if session is None
        else CassandraConnection(lambda: session, open_stores, where="the tests' session", owns_session=False)
    )

    @contextlib.asynccontextmanager
    async def open_with(s: Settings) -> AsyncIterator[Services]:
        async with running(build_services(s, redis, link, homes)) as services:
            opened.append(services)
            yield services

    config = server_config(create_app(settings, open_with), settings)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    try:
        if session is not None:  # ready, as /readyz would say
            await link.connected.wait()
            await eventually(lambda: _feed_connected(opened[0]))
        async with httpx.AsyncClient(timeout=10) as http:
            yield Gateway(settings, opened[0], port, http)
    finally:
        server.should_exit = True
        await task


async def _feed_connected(services: Services) -> bool:
    return services.hub.connected


GatewayFactory = Callable[..., contextlib.AbstractAsyncContextManager[Gateway]]


@pytest.fixture
def gateway_factory(settings: Settings, redis_client: Redis, cassandra_session: Session) -> GatewayFactory:
    """``async with gateway_factory(max_top_k=5) as gw``: a gateway with adjusted gateway settings."""

    def make(**gateway: Any) -> contextlib.AbstractAsyncContextManager[Gateway]:
        adjusted = settings.model_copy(update={"gateway": settings.gateway.model_copy(update=gateway)})
        return serve_gateway(adjusted, redis_client, cassandra_session)

    return make


@pytest.fixture
async def gateway(gateway_factory: GatewayFactory) -> AsyncIterator[Gateway]:
    async with gateway_factory() as gw:
        yield gw


@dataclass
class Boards:
    """Boards in the real catalog and totals written straight into this test's Redis projection."""

    settings: Settings
    catalog: CassandraCatalog
    projection: RedisProjection
    versions: dict[tuple[str, str], int]

    async def create(
        self,
        tie_policy: TiePolicy = TiePolicy.USER_ID,
        sort_order: SortOrder = SortOrder.DESC,
        shards: int = 1,
    ) -> Board:
        board = Board(f"gw-{uuid.uuid4().hex[:12]}", "Gateway test board", self.settings.region,
                      sort_order=sort_order, tie_policy=tie_policy, shards=shards)  # fmt: skip
        assert await self.catalog.create(board)
        return board

    async def wipe(self, board: Board) -> None:
        """What a Redis that lost its data did to the board: every key of every shard gone, and
        its name in the layouts hash (which lives with the epoch)."""
        prefix = self.settings.redis.key_prefix
        redis = self.projection.redis
        for tag in (board_tag(prefix, board.id), f"{prefix}:{{{prefix}:{board.id}#"):
            async for key in redis.scan_iter(match=tag + "*", count=1000):
                await redis.delete(key)
        await redis.hdel(layouts_key(prefix), board.id)

    async def corrupt(self, board: Board) -> None:
        """A board whose ranking is not a sorted set: a projection no writer of ours leaves."""
        await self.set_totals(board, [("ann", 1)])
        layout = await self.projection.layouts.live_one(board.id)
        assert layout is not None
        await self.projection.redis.set(
            layout.shard(self.settings.redis.key_prefix, 0).ranking, "not a sorted set"
        )

    async def set_totals(self, board: Board, totals: Sequence[tuple[str, int]], hint: bool = False) -> int:
        """Apply absolute totals with the next versions; with ``hint``, publish it as the projector does."""
        projected = []
        for i, (user, total) in enumerate(totals):
            version = self.versions[(board.id, user)] = self.versions.get((board.id, user), 0) + 1
            reached = reached_position(1_700_000_000_000 + version, 0, i)
            score, member = encode(board.sort_order, board.tie_policy, user, total, reached)
            projected.append(ProjectedTotal(user, version, total, score, member))
        result = await self.projection.apply(board.id, projected, board.shards)
        if hint and result.sequence:
            await self.publish_hint(board, result.sequence, totals)
        return result.sequence

    async def publish_hint(self, board: Board, sequence: int, totals: Sequence[tuple[str, int]]) -> None:
        users = [{"userId": u, "score": t, "version": self.versions[(board.id, u)]} for u, t in totals]
        payload = {"boardId": board.id, "sequence": sequence, "positions": {f"{self.settings.region}:0": sequence},
                   "users": users, "truncated": False}  # fmt: skip
        await self.projection.publish_hint(board.id, msgspec.json.encode(payload))

    async def set_positions(self, offsets: dict[int, int], accepted_ms: int) -> None:
        """A projection of this region that reflects ``offsets`` of its awards partitions."""
        await self.projection.start_epoch("test-epoch")
        await self.advance(offsets, accepted_ms)

    async def advance(self, offsets: dict[int, int], accepted_ms: int) -> None:
        region = self.settings.region
        marks = {(region, p): SourcePosition(o, accepted_at_ms=accepted_ms) for p, o in offsets.items()}
        assert await self.projection.advance("test-epoch", marks)


@pytest.fixture
def boards(settings: Settings, redis_client: Redis, cassandra_session: Session) -> Boards:
    return Boards(settings, CassandraCatalog(cassandra_session),
                  RedisProjection(redis_client, settings.redis.key_prefix), {})  # fmt: skip


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 10.0) -> None:
    await Region.wait_until(check, within)
