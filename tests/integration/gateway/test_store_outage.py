"""A Cassandra outage seen by the gateway: coded errors, reads of cached boards, the truth in /readyz,
and recovery; unknown board ids are remembered in bounded number."""

from __future__ import annotations

from redis.asyncio import Redis

from regions.runtime.settings import Settings
from tests.integration.gateway.conftest import Boards, Gateway, GatewayFactory, eventually, serve_gateway
from tests.integration.gateway.test_admin import ADMIN, CREATE, new_id
from tests.integration.gateway.test_profiles import gateway_via_proxy
from tests.proxy import TcpProxy

BOARD = "query($id: ID!) { leaderboard(id: $id) { id top { entries { userId score } } } }"


async def _catalog_fails(gw: Gateway) -> bool:
    body = await gw.query(BOARD, {"id": new_id()})
    return "errors" in body


async def test_cassandra_outage_gives_store_unavailable_and_cached_boards_still_read(
    settings: Settings, redis_client: Redis, boards: Boards
) -> None:
    known = await boards.create()
    await boards.set_totals(known, [("ann", 5)])
    proxy = TcpProxy("127.0.0.1", settings.cassandra.port)
    async with gateway_via_proxy(settings, redis_client, proxy, board_cache_ttl_s=0.1) as gw:
        before = await gw.query(BOARD, {"id": known.id})
        proxy.cut()
        await eventually(lambda: _catalog_fails(gw), within=30)

        uncached = await gw.query(BOARD, {"id": new_id()})
        listed = await gw.query("{ leaderboards { id } }")
        created = await gw.query(CREATE, {"input": {"id": new_id(), "name": "x"}}, headers=ADMIN)
        cached = await gw.query(BOARD, {"id": known.id})
        ready = await gw.http.get(gw.url.removesuffix("/graphql") + "/readyz")

        proxy.heal()
        await eventually(lambda: _catalog_reads(gw), within=30)

    assert (
        cached["data"]
        == before["data"]
        == {"leaderboard": {"id": known.id, "top": {"entries": [{"userId": "ann", "score": 5}]}}}
    )
    for body in (uncached, listed, created):
        error = body["errors"][0]
        assert error["extensions"]["code"] == "STORE_UNAVAILABLE", body
        assert "unavailable" in error["message"]
    assert ready.status_code == 200
    assert ready.json()["stores"]["cassandra"] == "down"


async def _catalog_reads(gw: Gateway) -> bool:
    return "errors" not in await gw.query(BOARD, {"id": new_id()})


async def test_gateway_starts_while_cassandra_is_down_and_serves_once_it_is_back(
    settings: Settings, redis_client: Redis, boards: Boards
) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 5)])
    proxy = TcpProxy("127.0.0.1", settings.cassandra.port)
    port = await proxy.start()
    proxy.cut()
    cassandra = settings.cassandra.model_copy(update={"port": port, "request_timeout_s": 1.0})
    try:
        async with serve_gateway(
            settings.model_copy(update={"cassandra": cassandra}), redis_client, None
        ) as gw:
            ready_while_down = await gw.http.get(gw.url.removesuffix("/graphql") + "/readyz")
            while_down = await gw.query(BOARD, {"id": board.id})
            proxy.heal()
            await eventually(lambda: _ready(gw), within=60)
            after = await gw.query(BOARD, {"id": board.id})
    finally:
        await proxy.close()

    assert ready_while_down.status_code == 503
    assert ready_while_down.json()["checks"]["board_catalog"] is False
    assert ready_while_down.json()["stores"]["cassandra"] == "connecting"
    assert while_down["errors"][0]["extensions"]["code"] == "STORE_UNAVAILABLE"
    assert after["data"]["leaderboard"]["top"]["entries"] == [{"userId": "ann", "score": 5}]


async def _ready(gw: Gateway) -> bool:
    return (await gw.http.get(gw.url.removesuffix("/graphql") + "/readyz")).status_code == 200


async def test_unknown_board_ids_are_remembered_in_bounded_number(gateway_factory: GatewayFactory) -> None:
    async with gateway_factory(max_unknown_boards=5) as gw:
        for i in range(20):
            body = await gw.query("query($id: ID!) { leaderboard(id: $id) { id } }", {"id": f"nope-{i}"})
            assert body["data"] == {"leaderboard": None}

        assert gw.services.boards.unknown_ids() == 5
