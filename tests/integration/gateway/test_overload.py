"""The gateway over its bound of operations, against the real servers: queries over their share get
503 OVERLOADED with Retry-After before they run while an admin mutation is still admitted, and
under load live push is shed first (hints merged and counted) while queries are answered."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import urlsplit

from cassandra.cluster import Session
from prometheus_client import REGISTRY
from redis.asyncio import Redis

from regions.runtime.settings import Settings
from regions.stores.redis.connection import connect_redis
from tests.integration.gateway.conftest import Boards, Gateway, eventually, serve_gateway
from tests.integration.gateway.test_admin import ADMIN, CREATE, new_id
from tests.integration.gateway.test_profiles import gateway_via_proxy
from tests.integration.gateway.test_subscriptions import TRANSPORT_WS, collect
from tests.proxy import TcpProxy

BOARD = "query($id: ID!) { leaderboard(id: $id) { id top { entries { userId score } } } }"
WITH_PROFILES = (
    "query($id: ID!) { leaderboard(id: $id) { top { entries { userId profile { displayName } } } } }"
)


def _with(settings: Settings, **gateway: Any) -> Settings:
    return settings.model_copy(update={"gateway": settings.gateway.model_copy(update=gateway)})


async def _in_flight(gw: Gateway, operations: int) -> bool:
    return gw.services.admission.in_flight == operations


async def test_queries_over_their_share_are_overloaded_while_a_mutation_is_admitted(
    settings: Settings, boards: Boards, cassandra_session: Session
) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 5)])
    redis_url = urlsplit(settings.redis.url)
    proxy = TcpProxy(redis_url.hostname or "127.0.0.1", redis_url.port or 6379)
    port = await proxy.start()
    redis = connect_redis(f"redis://127.0.0.1:{port}{redis_url.path}")
    bounded = _with(settings, max_concurrent_operations=3, reserved_for_mutations=1, top_cache_ttl_s=0)
    try:
        async with serve_gateway(bounded, redis, cassandra_session) as gw:
            assert "errors" not in await gw.query(BOARD, {"id": board.id})  # the board is cached now
            proxy.hold()  # the projection's reads hang: queries stay in flight
            slow = [asyncio.create_task(gw.query(BOARD, {"id": board.id})) for _ in range(2)]
            await eventually(lambda: _in_flight(gw, 2))
            started = time.perf_counter()
            shed = await gw.http.post(gw.url, json={"query": BOARD, "variables": {"id": board.id}})
            shed_s = time.perf_counter() - started
            created = await gw.query(CREATE, {"input": {"id": new_id(), "name": "Admitted"}}, headers=ADMIN)
            proxy.release()
            answered = await asyncio.gather(*slow)
    finally:
        await proxy.close()
        await redis.aclose()

    assert shed.status_code == 503 and shed.headers["Retry-After"] == "1"
    [error] = shed.json()["errors"]
    assert error["extensions"]["code"] == "OVERLOADED" and "max_concurrent_operations = 3" in error["message"]
    assert shed_s < 0.5, f"the refusal took {shed_s * 1000:.0f} ms"
    assert created["data"]["createLeaderboard"]["name"] == "Admitted", created
    assert [a["data"]["leaderboard"]["top"]["entries"] for a in answered] == [
        [{"userId": "ann", "score": 5}]
    ] * 2


def _hints_shed() -> float:
    return REGISTRY.get_sample_value("lb_gateway_hints_shed_total") or 0.0


async def test_under_load_live_push_is_shed_while_queries_are_answered(
    settings: Settings, redis_client: Redis, boards: Boards
) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 5)])
    await boards.set_positions({0: 0}, accepted_ms=1_700_000_000_000)  # a live projection
    proxy = TcpProxy("127.0.0.1", settings.cassandra.port)
    async with gateway_via_proxy(
        settings, redis_client, proxy, max_concurrent_operations=8, reserved_for_mutations=1,
        push_shed_at_operations=1, profile_timeout_s=3, profile_breaker_failures=100, profile_cache_ttl_s=0,
        top_cache_ttl_s=0, board_cache_ttl_s=600,
    ) as gw:  # fmt: skip
        assert "errors" not in await gw.query(BOARD, {"id": board.id})  # the board is cached now
        received: list[dict[str, Any]] = []
        follower = asyncio.create_task(collect(gw, {"board": board.id}, [TRANSPORT_WS], 1, received))
        await eventually(lambda: _subscribed(gw, board.id))
        proxy.hold()  # profile lookups hang: a read with profiles stays in flight its 3 s
        slow = asyncio.create_task(gw.query(WITH_PROFILES, {"id": board.id}))
        await eventually(lambda: _in_flight(gw, 1))
        shed_before = _hints_shed()
        sequences = [await boards.set_totals(board, [("bob", 10 * i)], hint=True) for i in range(1, 4)]
        await asyncio.sleep(0.3)
        while_shed = list(received)
        started = time.perf_counter()
        answered = await gw.query(BOARD, {"id": board.id})
        query_s = time.perf_counter() - started
        shed = _hints_shed() - shed_before
        await slow
        proxy.release()
        await asyncio.wait_for(follower, 10)

    assert while_shed == [] and shed == 3
    assert answered["data"]["leaderboard"]["top"]["entries"] == [
        {"userId": "bob", "score": 30}, {"userId": "ann", "score": 5}
    ]  # fmt: skip
    assert query_s < 1.0, f"the query took {query_s * 1000:.0f} ms"
    assert received == [{"__typename": "TopKChanged", "k": 10, "sequence": sequences[-1]}]  # the latest, once


async def _subscribed(gw: Gateway, board_id: str) -> bool:
    return len(gw.services.hub.mailbox_depths(board_id)) == 1
