"""HOME and REGIONAL through GraphQL with two regions: a gateway of region eu answers HOME reads of a
board homed in us from us's projection (another Redis database here, reached by the URL the settings
give, as across machines), REGIONAL ones from its own, and HOME_UNAVAILABLE when us's projection
cannot be reached, while REGIONAL still answers; a HOME feed cut off silently reconnects."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any, cast
from urllib.parse import urlparse

import msgspec
import pytest
from cassandra.cluster import Session
from redis.asyncio import Redis
from websockets.asyncio.client import connect

from gateway.hub import HintHub
from gateway.wiring import HomeLink, home_links
from regions.core.boards import Board
from regions.core.ordering import encode
from regions.runtime.settings import RegionEndpoint, Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.redis.projection import ProjectedTotal, RedisProjection, connect_redis
from tests.harness import free_port
from tests.integration.gateway.conftest import Gateway, eventually, serve_gateway
from tests.integration.gateway.test_subscriptions import TRANSPORT_WS
from tests.proxy import TcpProxy

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
    projected = [_total(board, user, total) for user, total in totals.items()]
    await projection.apply(board.id, projected)


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
        await _close(homes)

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
        await _close(homes)


SUBSCRIBE = """subscription($board: ID!, $user: ID, $scope: Scope) {
  leaderboardUpdates(leaderboardId: $board, userId: $user, scope: $scope) {
    __typename ... on ScoreUpdated { score asOf { region } } } }"""


async def _first_message(gw: Gateway, variables: dict[str, Any]) -> dict[str, Any]:
    async with connect(gw.ws_url, subprotocols=[TRANSPORT_WS]) as ws:
        await ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        await ws.send(json.dumps({"id": "1", "type": "subscribe",
                                  "payload": {"query": SUBSCRIBE, "variables": variables}}))  # fmt: skip
        return cast(dict[str, Any], json.loads(await asyncio.wait_for(ws.recv(), 20)))


async def test_home_updates_come_from_the_home_regions_projection_or_fail_clearly(
    settings: Settings, redis_client: Redis, us_redis: Redis, cassandra_session: Session
) -> None:
    prefix = settings.redis.key_prefix
    board = Board(f"gw-home-{uuid.uuid4().hex[:8]}", "Homed in us", "us")
    assert await CassandraCatalog(cassandra_session).create(board)
    home = RedisProjection(us_redis, prefix)
    await _totals(home, prefix, board, {"ann": 5})
    await home.start_epoch("us-epoch")  # a live home projection

    unreachable = _eu(settings, f"redis://127.0.0.1:{free_port()}/0")
    homes = home_links(unreachable)
    try:
        async with serve_gateway(unreachable, redis_client, cassandra_session, homes) as gw:
            message = await _first_message(gw, {"board": board.id, "user": "ann", "scope": "HOME"})
            assert message["payload"]["errors"][0]["extensions"]["code"] == "HOME_UNAVAILABLE", message
    finally:
        await _close(homes)

    reachable = _eu(settings, _in_db(settings.redis.url, 1))
    homes = home_links(reachable)
    try:
        async with serve_gateway(reachable, redis_client, cassandra_session, homes) as gw:
            first = asyncio.create_task(
                _first_message(gw, {"board": board.id, "user": "ann", "scope": "HOME"})
            )
            await eventually(lambda: _following(gw, "us", board.id))
            applied = await home.apply(board.id, [_total(board, "ann", 9, version=2)])
            hint = {"boardId": board.id, "sequence": applied.sequence, "positions": {"us:0": 1},
                    "users": [{"userId": "ann", "score": 9, "version": 2}], "truncated": False}  # fmt: skip
            await home.publish_hint(board.id, msgspec.json.encode(hint))
            message = await first
            update = message["payload"]["data"]["leaderboardUpdates"]
            assert update == {"__typename": "ScoreUpdated", "score": 9, "asOf": {"region": "us"}}, message
    finally:
        await _close(homes)


async def _following(gw: Gateway, region: str, board_id: str) -> bool:
    return len(gw.services.hubs[region].mailbox_depths(board_id)) == 1


def _total(board: Board, user: str, total: int, version: int = 1) -> ProjectedTotal:
    score, member = encode(board.sort_order, board.tie_policy, user, total, "")
    return ProjectedTotal(user, version, total, score, member)


async def _close(homes: list[HomeLink]) -> None:
    for link in homes:
        await link.reads.aclose(close_connection_pool=True)
        await link.feed.aclose()


async def test_a_home_feed_cut_off_silently_is_reconnected_and_its_subscribers_resync_and_stream_again(
    settings: Settings, redis_client: Redis, us_redis: Redis, cassandra_session: Session
) -> None:
    """The link to the home region's Redis passes nothing (a silent partition: no connection
    refused or reset). The HOME feed notices by the PING it gets no answer to, says it is not
    connected, and once the link is back reconnects: its subscriber gets a Resync (hints may have
    been missed), then the home region's updates again."""
    prefix = settings.redis.key_prefix
    board = Board(f"gw-home-{uuid.uuid4().hex[:8]}", "Homed in us", "us")
    assert await CassandraCatalog(cassandra_session).create(board)
    home = RedisProjection(us_redis, prefix)
    await _totals(home, prefix, board, {"ann": 5})
    await home.start_epoch("us-epoch")
    url = urlparse(settings.redis.url)
    proxy = TcpProxy(url.hostname or "127.0.0.1", url.port or 6379)
    linked = _eu(settings, f"redis://127.0.0.1:{await proxy.start()}/1")
    linked = linked.model_copy(
        update={"gateway": linked.gateway.model_copy(update={"hints_ping_interval_s": 0.5})}
    )
    homes = home_links(linked)
    try:
        async with serve_gateway(linked, redis_client, cassandra_session, homes) as gw:
            hub = gw.services.hubs["us"]
            await eventually(lambda: _connected(hub, True))
            async with connect(gw.ws_url, subprotocols=[TRANSPORT_WS]) as ws:
                await ws.send(json.dumps({"type": "connection_init"}))
                assert json.loads(await ws.recv())["type"] == "connection_ack"
                payload = {
                    "query": SUBSCRIBE,
                    "variables": {"board": board.id, "user": "ann", "scope": "HOME"},
                }
                await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
                await eventually(lambda: _following(gw, "us", board.id))

                proxy.blackhole()
                await eventually(lambda: _connected(hub, False), within=20)
                proxy.heal()
                await eventually(lambda: _connected(hub, True), within=20)
                resync = json.loads(await asyncio.wait_for(ws.recv(), 20))
                assert resync["payload"]["data"]["leaderboardUpdates"]["__typename"] == "Resync", resync

                await eventually(lambda: _following(gw, "us", board.id))
                applied = await home.apply(board.id, [_total(board, "ann", 9, version=2)])
                hint = {"boardId": board.id, "sequence": applied.sequence, "positions": {"us:0": 1},
                        "users": [{"userId": "ann", "score": 9, "version": 2}], "truncated": False}  # fmt: skip
                await home.publish_hint(board.id, msgspec.json.encode(hint))
                update = json.loads(await asyncio.wait_for(ws.recv(), 20))
                assert update["payload"]["data"]["leaderboardUpdates"] == {
                    "__typename": "ScoreUpdated", "score": 9, "asOf": {"region": "us"}
                }, update  # fmt: skip
    finally:
        await _close(homes)
        await proxy.close()


async def _connected(hub: HintHub, connected: bool) -> bool:
    return hub.connected is connected
