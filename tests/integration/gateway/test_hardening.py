"""Depth, token and alias limits, introspection switch, error masking, CORS, health and metrics."""

from __future__ import annotations

from redis.asyncio import Redis

from schema.redis_keys import board_keys
from tests.integration.gateway.conftest import Boards, Gateway, GatewayFactory


async def test_too_deep_a_query_is_rejected_with_its_message(gateway_factory: GatewayFactory) -> None:
    async with gateway_factory(max_query_depth=3) as gw:
        body = await gw.query('{ leaderboard(id: "x") { top { entries { profile { displayName } } } } }')

    assert body["errors"][0]["message"] == "'anonymous' exceeds maximum operation depth of 3"


async def test_too_many_aliases_and_tokens_are_rejected(gateway_factory: GatewayFactory) -> None:
    aliases = " ".join(f'a{i}: leaderboard(id: "x") {{ id }}' for i in range(6))
    async with gateway_factory(max_aliases=5, max_query_tokens=80) as gw:
        too_many_aliases = await gw.query("{ " + aliases + " }")
        long_query = "{ " + " ".join(f'leaderboard(id: "x{i}") {{ id }}' for i in range(15)) + " }"
        too_many_tokens = await gw.query(long_query)

    assert too_many_aliases["errors"][0]["message"] == "6 aliases found. Allowed: 5"
    assert "Document contains more than 80 tokens" in too_many_tokens["errors"][0]["message"]


async def test_introspection_can_be_switched_off(gateway_factory: GatewayFactory) -> None:
    query = "{ __schema { queryType { name } } }"
    async with gateway_factory(introspection=True) as on:
        allowed = await on.query(query)
    async with gateway_factory(introspection=False) as off:
        refused = await off.query(query)
        typename = await off.query("{ __typename }")

    assert allowed["data"]["__schema"]["queryType"]["name"] == "Query"
    assert "introspection" in refused["errors"][0]["message"].lower()
    assert typename["data"] == {"__typename": "Query"}


async def test_internal_errors_are_masked(gateway: Gateway, boards: Boards, redis_client: Redis) -> None:
    board = await boards.create()
    await redis_client.set(
        board_keys(gateway.settings.redis.key_prefix, board.id).ranking, "not a sorted set"
    )

    body = await gateway.query("query($id: ID!) { leaderboard(id: $id) { playerCount } }", {"id": board.id})

    assert body["errors"][0]["message"] == "Unexpected error."
    assert "WRONGTYPE" not in str(body)


async def test_syntax_errors_are_shown(gateway: Gateway) -> None:
    body = await gateway.query("{ leaderboard(id: ")

    assert body["errors"][0]["message"].startswith("Syntax Error")


async def test_cors_allows_only_configured_origins(gateway_factory: GatewayFactory) -> None:
    async with gateway_factory(allowed_origins=["https://game.example"]) as gw:
        preflight = {
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        }
        allowed = await gw.http.options(gw.url, headers={"Origin": "https://game.example", **preflight})
        refused = await gw.http.options(gw.url, headers={"Origin": "https://evil.example", **preflight})

    assert allowed.headers["access-control-allow-origin"] == "https://game.example"
    assert "access-control-allow-origin" not in refused.headers


async def test_health_readiness_and_metrics(gateway: Gateway) -> None:
    base = gateway.url.removesuffix("/graphql")
    await gateway.query("{ __typename }")

    alive = await gateway.http.get(base + "/healthz")
    ready = await gateway.http.get(base + "/readyz")
    metrics = await gateway.http.get(base + "/metrics")

    assert alive.status_code == 200
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"hints_feed": True, "board_catalog": True}
    assert ready.json()["stores"] == {"cassandra": "up", "profiles": "closed"}
    assert "lb_gateway_operation_seconds_count" in metrics.text
