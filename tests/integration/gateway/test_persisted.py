"""Automatic persisted queries (Apollo's protocol) and compiled plans of known documents: a known
document answers exactly as the generic executor does, and every rule still applies to it."""

from __future__ import annotations

import hashlib
import json
from typing import Any, cast

from prometheus_client import REGISTRY

from tests.integration.gateway.conftest import Boards, Gateway, GatewayFactory

PLAYER = """query($b: ID!, $u: ID!) {
  leaderboard(id: $b) { player(userId: $u) { rank userId score asOf { region stale positions { partition offset } } } }
}"""
BOARD = """query($b: ID!, $u: ID!) {
  leaderboard(id: $b) { __typename id name homeRegion status sortOrder aggregation tiePolicy playerCount
    top(k: 3) { entries { rank userId score version } asOf { region stale newestAcceptedAt
      positions { region partition offset } } }
    me: player(userId: $u) { rank }
  }
}"""
CONTEXT = """query($b: ID!, $u: ID!) {
  leaderboard(id: $b) { id playerCount
    context(userId: $u, range: 2) { above { rank userId score } player { rank userId } below { rank userId } }
  }
}"""


def persisted(document: str) -> dict[str, Any]:
    return {"persistedQuery": {"version": 1, "sha256Hash": hashlib.sha256(document.encode()).hexdigest()}}


async def get(
    gw: Gateway, document: str | None, variables: dict[str, Any], extensions: dict[str, Any]
) -> Any:
    params = {"variables": json.dumps(variables), "extensions": json.dumps(extensions)}
    if document is not None:
        params["query"] = document
    response = await gw.http.get(gw.url, params=params)
    return response.status_code, response.json()


def planned(outcome: str) -> float:
    return cast(float, REGISTRY.get_sample_value("lb_gateway_planned_total", {"outcome": outcome}) or 0.0)


async def test_an_unknown_hash_asks_for_the_document_then_the_hash_alone_answers(
    gateway: Gateway, boards: Boards
) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 50), ("bob", 40)])
    variables = {"b": board.id, "u": "bob"}

    status, unknown = await get(gateway, None, variables, persisted(PLAYER))
    assert status == 200
    assert unknown == {
        "errors": [{"message": "PersistedQueryNotFound", "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}]
    }

    registered = await gateway.http.post(
        gateway.url, json={"query": PLAYER, "variables": variables, "extensions": persisted(PLAYER)}
    )
    status, by_hash = await get(gateway, None, variables, persisted(PLAYER))
    plain = await gateway.query(PLAYER, variables)

    assert registered.status_code == 200 and status == 200
    assert by_hash == registered.json() == plain
    assert by_hash["data"]["leaderboard"]["player"]["rank"] == 2


async def test_a_hash_that_is_not_the_documents_is_refused(gateway: Gateway) -> None:
    wrong = persisted(CONTEXT)
    response = await gateway.http.post(
        gateway.url, json={"query": PLAYER, "variables": {}, "extensions": wrong}
    )
    status, by_get = await get(gateway, PLAYER, {}, wrong)

    assert response.status_code == 400 and status == 400
    expected = {"message": "provided sha does not match query", "extensions": {"code": "BAD_USER_INPUT"}}
    assert response.json() == by_get == {"errors": [expected]}
    status, still_unknown = await get(gateway, None, {}, wrong)
    assert still_unknown["errors"][0]["message"] == "PersistedQueryNotFound"


async def test_the_cost_rule_applies_to_a_persisted_document(
    gateway_factory: GatewayFactory, boards: Boards
) -> None:
    board = await boards.create()
    costly = (
        "query($b: ID!) { leaderboard(id: $b) { top(k: 20) { entries { userId profile { displayName } } } } }"
    )
    async with gateway_factory(max_query_cost=100) as gw:
        first = await gw.http.post(
            gw.url, json={"query": costly, "variables": {"b": board.id}, "extensions": persisted(costly)}
        )
        for _ in range(2):
            _, again = await get(gw, None, {"b": board.id}, persisted(costly))
            assert again["errors"][0]["extensions"]["code"] == "COST_LIMIT_EXCEEDED"
            assert again.get("data") is None

    assert first.json()["errors"][0]["extensions"]["code"] == "COST_LIMIT_EXCEEDED"


async def test_a_known_document_runs_by_its_plan_with_the_generic_answers(
    gateway_factory: GatewayFactory, boards: Boards
) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 50), ("bob", 40), ("cat", 40), ("dan", 10), ("eve", 5)])
    await boards.set_positions({0: 41, 2: 7}, accepted_ms=1_700_000_123_456)
    reads = [
        (document, {"b": b, "u": user})
        for document in (PLAYER, CONTEXT, BOARD)
        for b in (board.id, "gw-no-such-board")
        for user in ("ann", "cat", "eve", "nobody")
    ]
    reads.append((PLAYER, {"b": "not a board id!", "u": "ann"}))  # an argument error: the generic answer

    async with gateway_factory(planned_reads=False) as generic:
        expected = [await generic.query(d, v) for d, v in reads]
    answered = planned("answered")
    async with gateway_factory() as gw:
        first = [await gw.query(d, v) for d, v in reads]
        second = [await gw.query(d, v) for d, v in reads]

    assert first == expected and second == expected
    assert planned("answered") - answered == 2 * 24 - 3  # every valid read but the first of each document
    assert any("errors" in body for body in expected)
