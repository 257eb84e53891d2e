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
from gateway.wiring import build_services, running
from regions.cassandra_catalog import CassandraCatalog
from regions.cassandra_store import CassandraConnection
from regions.core.boards import Board, SortOrder, TiePolicy
from regions.core.ordering import encode, reached_position
from regions.redis_projection import ProjectedTotal, RedisProjection
from regions.settings import Settings
from schema.redis_keys import board_keys
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
async def serve_gateway(settings: Settings, redis: Redis, session: Session | None) -> AsyncIterator[Gateway]:
    """A gateway on the test's Redis client; on the shared Cassandra ``session`` (ready before the
    gateway is), or with ``session`` None on its own connection to ``settings.cassandra``, opened in
    the background as in production."""
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
        async with running(build_services(s, redis, link)) as services:
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
        self, tie_policy: TiePolicy = TiePolicy.USER_ID, sort_order: SortOrder = SortOrder.DESC
    ) -> Board:
        board = Board(f"gw-{uuid.uuid4().hex[:12]}", "Gateway test board", self.settings.region,
                      sort_order=sort_order, tie_policy=tie_policy)  # fmt: skip
        assert await self.catalog.create(board)
        return board

    async def set_totals(self, board: Board, totals: Sequence[tuple[str, int]], hint: bool = False) -> int:
        """Apply absolute totals with the next versions; with ``hint``, publish it as the projector does."""
        projected = []
        for i, (user, total) in enumerate(totals):
            version = self.versions[(board.id, user)] = self.versions.get((board.id, user), 0) + 1
            reached = reached_position(1_700_000_000_000 + version, 0, i)
            score, member = encode(board.sort_order, board.tie_policy, user, total, reached)
            projected.append(ProjectedTotal(user, version, total, score, member))
        result = await self.projection.apply(board_keys(self.settings.redis.key_prefix, board.id), projected)
        if hint and result.sequence:
            await self.publish_hint(board, result.sequence, totals)
        return result.sequence

    async def publish_hint(self, board: Board, sequence: int, totals: Sequence[tuple[str, int]]) -> None:
        users = [{"userId": u, "score": t, "version": self.versions[(board.id, u)]} for u, t in totals]
        payload = {"boardId": board.id, "sequence": sequence, "positions": {"0": sequence},
                   "users": users, "truncated": False}  # fmt: skip
        await self.projection.publish_hint(board.id, msgspec.json.encode(payload))

    async def set_positions(self, offsets: dict[int, int], accepted_ms: int) -> None:
        await self.projection.start_epoch("test-epoch")
        assert await self.projection.advance("test-epoch", accepted_ms, offsets)


@pytest.fixture
def boards(settings: Settings, redis_client: Redis, cassandra_session: Session) -> Boards:
    return Boards(settings, CassandraCatalog(cassandra_session),
                  RedisProjection(redis_client, settings.redis.key_prefix), {})  # fmt: skip


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 10.0) -> None:
    await Region.wait_until(check, within)
