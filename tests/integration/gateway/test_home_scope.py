"""HOME and REGIONAL through GraphQL with two regions: a gateway of region eu answers HOME reads of a
board homed in us from us's projection (another Redis database here, reached by the URL the settings
give, as across machines), REGIONAL ones from its own, and HOME_UNAVAILABLE when us's projection
cannot be reached, while REGIONAL still answers."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from cassandra.cluster import Session
from redis.asyncio import Redis

from gateway.wiring import home_links
from regions.cassandra_catalog import CassandraCatalog
from regions.core.boards import Board
from regions.core.ordering import encode
from regions.redis_projection import ProjectedTotal, RedisProjection, connect_redis
from regions.settings import RegionEndpoint, Settings
from schema.redis_keys import board_keys
from tests.harness import free_port
from tests.integration.gateway.conftest import serve_gateway

READ = """query($id: ID!, $scope: Scope!) { leaderboard(id: $id) {
  playerCount(scope: $scope)
  top(k: 5, scope: $scope) { entries { userId score } asOf { region regions { region stale } } } } }"""


def _in_db(url: str, db: int) -> str:
    return f"{url.rsplit('/', 1)[0]}/{db}"


def _eu(settings: Settings, us_redis_url: str) -> Settings:
    regions = {
        "eu": RegionEndpoint(
            kafka_bootstrap_servers=settings.kafka.bootstrap_servers, redis_url=settings.redis.url
        ),
        "us": RegionEndpoint(kafka_bootstrap_servers="127.0.0.1:1", redis_url=us_redis_url),
    }
    return settings.model_copy(update={"region": "eu", "regions": regions})


@pytest.fixture
async def us_redis(settings: Settings) -> AsyncIterator[Redis]:
    client = connect_redis(settings.redis.model_copy(update={"url": _in_db(settings.redis.url, 1)}))
    try:
        yield client
    finally:
        async for key in client.scan_iter(match=f"{settings.redis.key_prefix}:*", count=1000):
            await client.delete(key)
        await client.aclose()


async def _totals(projection: RedisProjection, prefix: str, board: Board, totals: dict[str, int]) -> None:
    projected = []
    for user, total in totals.items():
        score, member = encode(board.sort_order, board.tie_policy, user, total, "")
        projected.append(ProjectedTotal(user, 1, total, score, member))
    await projection.apply(board_keys(prefix, board.id), projected)


def _top(answer: dict[str, Any]) -> tuple[str, list[tuple[str, int]], int]:
    board = answer["data"]["leaderboard"]
    page = board["top"]
    return page["asOf"]["region"], [(e["userId"], e["score"]) for e in page["entries"]], board["playerCount"]


async def test_home_reads_the_home_regions_projection_and_fails_clearly_when_it_is_unreachable(
    settings: Settings, redis_client: Redis, us_redis: Redis, cassandra_session: Session
) -> None:
    prefix = settings.redis.key_prefix
    board = Board(f"gw-home-{uuid.uuid4().hex[:8]}", "Homed in us", "us")
    assert await CassandraCatalog(cassandra_session).create(board)
    await _totals(RedisProjection(redis_client, prefix), prefix, board, {"ann": 1})  # eu's copy, behind
    await _totals(RedisProjection(us_redis, prefix), prefix, board, {"ann": 5, "bob": 3})  # the home copy

    reachable = _eu(settings, _in_db(settings.redis.url, 1))
    homes = home_links(reachable)
    try:
        async with serve_gateway(reachable, redis_client, cassandra_session, homes) as gw:
            home = await gw.query(READ, {"id": board.id, "scope": "HOME"})
            assert _top(home) == ("us", [("ann", 5), ("bob", 3)], 2), home
            regional = await gw.query(READ, {"id": board.id, "scope": "REGIONAL"})
            assert _top(regional) == ("eu", [("ann", 1)], 1), regional
            regions = home["data"]["leaderboard"]["top"]["asOf"]["regions"]
            assert [r["region"] for r in regions] == ["eu", "us"]
    finally:
        for link in homes:
            await link.reads.aclose(close_connection_pool=True)
            await link.feed.aclose()

    unreachable = _eu(settings, f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    homes = home_links(unreachable)
    try:
        async with serve_gateway(unreachable, redis_client, cassandra_session, homes) as gw:
            home = await gw.query(READ, {"id": board.id, "scope": "HOME"})
            assert home["data"] is None or home["data"]["leaderboard"] is None, home
            assert {e["extensions"]["code"] for e in home["errors"]} == {"HOME_UNAVAILABLE"}, home
            assert "REGIONAL" in home["errors"][0]["message"]
            regional = await gw.query(READ, {"id": board.id, "scope": "REGIONAL"})
            assert _top(regional) == ("eu", [("ann", 1)], 1), regional
    finally:
        for link in homes:
            await link.reads.aclose(close_connection_pool=True)
            await link.feed.aclose()
