"""Depth, token and alias limits, introspection switch, error masking, CORS, health and metrics."""

from __future__ import annotations

import asyncio
import json
import logging
import re

import pytest
import websockets
from cassandra.cluster import Session
from graphql import get_introspection_query
from redis.asyncio import Redis
from websockets.asyncio.client import connect

from gateway import app
from regions.runtime.settings import Mode, Settings
from tests.integration.gateway.conftest import Boards, Gateway, GatewayFactory, serve_gateway
from tests.integration.gateway.test_subscriptions import TRANSPORT_WS


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
    await boards.corrupt(board)

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


ATTACK = "{ " + " ".join(f"a{i}: leaderboards {{ top(k: 100) {{ entries {{ profile {{ displayName }} }} }} }}" for i in range(15)) + " }"  # fmt: skip


async def test_the_fifteen_alias_attack_is_refused_before_it_runs_naming_its_cost(
    gateway: Gateway, boards: Boards
) -> None:
    await boards.create()
    base = gateway.url.removesuffix("/graphql")

    body = await gateway.query(ATTACK)
    metrics = (await gateway.http.get(base + "/metrics")).text

    assert body.get("data") is None
    error = body["errors"][0]
    assert error["extensions"] == {"code": "COST_LIMIT_EXCEEDED", "cost": 754650, "budget": 5000}
    assert error["message"].startswith("'anonymous' costs 754650, over the budget of 5000 per request")
    assert "lb_gateway_query_cost_bucket" in metrics


async def test_a_read_reports_its_cost_and_the_budget_comes_from_settings(
    gateway_factory: GatewayFactory, boards: Boards
) -> None:
    board = await boards.create()
    query = "query($id: ID!) { leaderboard(id: $id) { top(k: 20) { entries { userId profile { displayName } } } } }"
    async with gateway_factory(max_query_cost=100) as gw:
        over = await gw.query(query, {"id": board.id})
        under = await gw.query(query.replace("k: 20", "k: 10"), {"id": board.id})

    assert over["errors"][0]["extensions"]["cost"] == 1 + 2 + 1 + 20 * 5
    assert "errors" not in under
    assert under["extensions"]["cost"] == {"estimated": 1 + 2 + 1 + 10 * 5, "budget": 100}


async def test_introspection_depth_is_limited_and_the_standard_query_still_works(
    gateway_factory: GatewayFactory,
) -> None:
    deep = "{ __schema { types { fields { type { fields { type { fields { type { name } } } } } } } } }"
    async with gateway_factory(introspection=True, max_introspection_depth=6) as limited:
        refused = await limited.query(deep)
    async with gateway_factory(introspection=True) as default:
        standard = await default.query(get_introspection_query())

    assert refused["errors"][0]["message"] == "'anonymous' nests introspection 8 deep; the limit is 6"
    assert "errors" not in standard and standard["data"]["__schema"]["queryType"]["name"] == "Query"


async def test_introspection_is_off_by_default_in_production(
    settings: Settings, redis_client: Redis, cassandra_session: Session
) -> None:
    production = settings.model_copy(update={"mode": Mode.PRODUCTION})
    async with serve_gateway(production, redis_client, cassandra_session) as gw:
        refused = await gw.query("{ __schema { queryType { name } } }")

    assert "introspection" in refused["errors"][0]["message"].lower()


async def _answer(gw: Gateway, head: bytes, body_chunks: list[bytes]) -> tuple[bytes, bytes]:
    """Send a request head and part of a body, never finishing it; the answer's status line and
    body (the gateway closes the connection after it)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", gw.port)
    try:
        writer.write(head)
        for chunk in body_chunks:
            writer.write(chunk)
            await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    status, _, rest = answer.partition(b"\r\n")
    return status, rest.partition(b"\r\n\r\n")[2]


async def test_a_body_declared_over_the_cap_is_refused_before_it_is_sent(
    gateway_factory: GatewayFactory,
) -> None:
    async with gateway_factory(max_body_bytes=4096) as gw:
        head = (b"POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 50000000\r\n\r\n")  # fmt: skip
        status, _ = await _answer(gw, head, [])
        small = await gw.query("{ __typename }")

    assert status.startswith(b"HTTP/1.1 413")
    assert small["data"] == {"__typename": "Query"}


async def test_a_chunked_body_is_refused_once_it_passes_the_cap(gateway_factory: GatewayFactory) -> None:
    async with gateway_factory(max_body_bytes=4096) as gw:
        head = (b"POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")  # fmt: skip
        chunk = b"400\r\n" + b"a" * 1024 + b"\r\n"
        status, body = await _answer(gw, head, [chunk] * 8)  # 8 KB sent, and the body never ends

    assert status.startswith(b"HTTP/1.1 413")
    assert json.loads(body)["errors"][0] == {
        "message": "request body is over 4096 bytes (gateway.max_body_bytes)",
        "extensions": {"code": "LIMIT_EXCEEDED"},
    }


async def test_a_websocket_message_over_the_cap_closes_the_connection(
    gateway_factory: GatewayFactory,
) -> None:
    async with (
        gateway_factory(max_ws_message_bytes=4096) as gw,
        connect(gw.ws_url, subprotocols=[TRANSPORT_WS]) as ws,
    ):
        await ws.send(json.dumps({"type": "connection_init", "payload": {"pad": "x" * 8192}}))
        with pytest.raises(websockets.ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 10)

    assert ws.close_code == 1009


def _count(metrics: str, name: str, **labels: str) -> float:
    """The value of one sample of the /metrics text (0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in metrics.splitlines():
        if line.startswith(f"{name}{{{wanted}}} "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def test_operations_are_counted_by_root_field_and_outcome_and_only_bugs_log_a_traceback(
    gateway_factory: GatewayFactory, boards: Boards, redis_client: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    # An answer cache that outlives the test: the repeated read is a hit however slow the machine.
    async with gateway_factory(top_cache_ttl_s=60.0) as gateway:
        await _count_operations(gateway, boards, redis_client, caplog)


async def _count_operations(
    gateway: Gateway, boards: Boards, redis_client: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    board, broken = await boards.create(), await boards.create()
    await boards.corrupt(broken)
    base = gateway.url.removesuffix("/graphql")
    name = "lb_gateway_operation_seconds_count"
    before = (await gateway.http.get(base + "/metrics")).text
    read = "query($id: ID!) { leaderboard(id: $id) { id } }"

    with caplog.at_level(logging.INFO):
        await gateway.query(read, {"id": board.id})
        await gateway.query(read, {"id": board.id})  # the same answer again: from the answer cache
        await gateway.query(read, {"id": ""})
        await gateway.query(ATTACK)
        await gateway.query("{ leaderboard(id: ")
        await gateway.query("query($id: ID!) { leaderboard(id: $id) { playerCount } }", {"id": broken.id})
    after = (await gateway.http.get(base + "/metrics")).text

    def more(**labels: str) -> float:
        return _count(after, name, **labels) - _count(before, name, **labels)

    assert more(type="query", operation="leaderboard", outcome="ok") == 1
    assert more(type="query", operation="leaderboard", outcome="bad_user_input") == 1
    assert more(type="query", operation="leaderboards", outcome="cost_limit_exceeded") == 1
    assert more(type="invalid", operation="invalid", outcome="invalid") == 1
    assert more(type="query", operation="leaderboard", outcome="internal") == 1
    hits = _count(after, "lb_gateway_answer_cache_total", result="hit") - _count(
        before, "lb_gateway_answer_cache_total", result="hit"
    )
    assert hits >= 1
    logged = [
        (r.levelname, r.exc_info is not None)
        for r in caplog.records
        if r.name in ("gateway.requests", "strawberry.execution")
    ]
    assert logged == [("INFO", False), ("INFO", False), ("INFO", False), ("ERROR", True)]


async def test_graphiql_is_off_by_default_and_on_loads_only_the_gateways_own_files(
    gateway_factory: GatewayFactory,
) -> None:
    browser = {"Accept": "text/html"}
    async with gateway_factory() as default:
        off = await default.http.get(default.url, headers=browser)
        no_files = await default.http.get(default.url.replace("/graphql", "/graphiql/graphiql.min.js"))
    async with gateway_factory(graphiql=True) as on:
        page = await on.http.get(on.url, headers=browser)
        files = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        loaded = [await on.http.get(on.url.replace("/graphql", path)) for path in files]

    assert "graphiql" not in off.text.lower()
    assert off.status_code in (400, 404) and no_files.status_code == 404
    assert page.status_code == 200 and "graphiql" in page.text.lower()
    assert "/graphiql/graphiql.min.js" in files and "/graphiql/graphiql.min.css" in files
    assert [path for path in files if not path.startswith("/") or path.startswith("//")] == []  # no other host
    assert [r.status_code for r in loaded] == [200] * len(files)


def test_graphiql_on_without_its_files_is_refused_with_what_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app, "GRAPHIQL", app.GRAPHIQL / "nothing-here")
    settings = Settings().model_copy(update={"gateway": Settings().gateway.model_copy(update={"graphiql": True})})

    assert app.graphiql_problem(Settings()) is None
    problem = app.graphiql_problem(settings)
    assert problem is not None and "ops/graphiql" in problem and "graphiql.min.js" in problem
    with pytest.raises(RuntimeError, match="ops/graphiql"):
        app.create_app(settings)
