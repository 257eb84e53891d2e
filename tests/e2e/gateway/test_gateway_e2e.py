"""End to end: awards posted through the intake reach GraphQL subscribers, reads and the live page.

Everything is a separate real process: the region's processor, projector, audit sink and intake,
and ``python -m gateway``; the clients are gql (both WebSocket protocols), the npm graphql-ws
client and headless Chromium.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
from gql import Client, GraphQLRequest
from gql.transport.websockets import WebsocketsTransport

from tests.e2e.gateway.conftest import JS, GatewayProcess, node, wait_for
from tests.harness import Region

ADMIN = {"Authorization": "Bearer dev-admin-token"}
UPDATES = """subscription($board: ID!, $user: ID) {
  leaderboardUpdates(leaderboardId: $board, userId: $user) {
    __typename
    ... on ScoreUpdated { userId score rank version sequence }
    ... on RankChanged { oldRank newRank sequence }
    ... on TopKChanged { k sequence }
    ... on Resync { reason sequence }
  }
}"""


def award(board: str, user: str, delta: int) -> dict[str, Any]:
    return {"matchId": f"m-{uuid.uuid4().hex[:10]}", "leaderboardId": board, "userId": user,
            "awardType": "win", "delta": delta}  # fmt: skip


async def create_board(gw: GatewayProcess) -> str:
    board = f"e2e-{uuid.uuid4().hex[:10]}"
    mutation = 'mutation($id: ID!) { createLeaderboard(input: {id: $id, name: "E2E board"}) { id status } }'
    async with httpx.AsyncClient() as http:
        refused = (await http.post(gw.url, json={"query": mutation, "variables": {"id": board}})).json()
        created = (
            await http.post(gw.url, json={"query": mutation, "variables": {"id": board}}, headers=ADMIN)
        ).json()
    assert refused["errors"][0]["extensions"]["code"] == "UNAUTHORIZED"
    assert created["data"]["createLeaderboard"] == {"id": board, "status": "OPEN"}
    return board


async def gql_subscriber(
    gw: GatewayProcess, board: str, user: str, total: int, protocols: list[str] | None
) -> list[dict[str, Any]]:
    transport = (
        WebsocketsTransport(url=gw.ws_url, subprotocols=protocols)
        if protocols
        else WebsocketsTransport(url=gw.ws_url)
    )
    seen: list[dict[str, Any]] = []
    async with Client(transport=transport) as session:
        request = GraphQLRequest(UPDATES, variable_values={"board": board, "user": user})
        async for result in session.subscribe(request):
            seen.append(result["leaderboardUpdates"])
            # Until the player's final score and a top-K change: one round may tell both, in either order.
            if _final_score(seen, user, total) and any(u["__typename"] == "TopKChanged" for u in seen):
                return seen
    return seen


def _final_score(seen: list[dict[str, Any]], user: str, total: int) -> bool:
    return any(u["__typename"] == "ScoreUpdated" and (u["userId"], u["score"]) == (user, total) for u in seen)


async def test_awards_through_the_intake_reach_gql_subscribers_on_both_protocols_and_reads(
    region: Region, gateway_process: GatewayProcess
) -> None:
    gw = gateway_process
    board = await create_board(gw)
    subscribers = [
        asyncio.create_task(
            gql_subscriber(gw, board, "alice", 30, [WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL])
        ),
        asyncio.create_task(gql_subscriber(gw, board, "alice", 30, None)),  # gql's default: legacy graphql-ws
    ]
    await wait_for(lambda: _at_least(gw, 2), what="two subscriptions")

    responses = [await region.client.send(award(board, "alice", d)) for d in (10, 20)]
    await region.client.send(award(board, "bob", 25))
    updates = await asyncio.wait_for(asyncio.gather(*subscribers), 30)

    for seen in updates:
        assert _final_score(seen, "alice", 30)
        assert {"ScoreUpdated", "TopKChanged"} <= {u["__typename"] for u in seen}
        sequences = [u["sequence"] for u in seen]
        assert sequences == sorted(sequences)
    accepted = responses[-1].json()["accepted"][0]
    await _read_covers(gw, board, accepted["partition"], accepted["offset"], expected=30)


async def _at_least(gw: GatewayProcess, count: int) -> bool:
    return await gw.subscriptions() >= count


async def _read_covers(gw: GatewayProcess, board: str, partition: int, offset: int, expected: int) -> None:
    """asOf is honest: once it reaches the award's position, the award is in the answer."""
    query = 'query($b: ID!) { leaderboard(id: $b) { player(userId: "alice") { score asOf { positions { partition offset } } } } }'
    async with httpx.AsyncClient() as http:
        for _ in range(200):
            body = (await http.post(gw.url, json={"query": query, "variables": {"b": board}})).json()
            player = body["data"]["leaderboard"]["player"]
            covered = player and any(
                p["partition"] == partition and p["offset"] >= offset for p in player["asOf"]["positions"]
            )
            if covered:
                assert player["score"] == expected
                return
            await asyncio.sleep(0.1)
    raise AssertionError("asOf never reached the award's position")


async def test_npm_graphql_ws_client_receives_hints_for_awards(
    region: Region, gateway_process: GatewayProcess
) -> None:
    gw = gateway_process
    board = await create_board(gw)
    client = await asyncio.create_subprocess_exec(
        node(), str(JS / "subscribe.mjs"), gw.ws_url, board, "carol", "50", "42",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    await wait_for(lambda: _at_least(gw, 1), what="the graphql-ws subscription")

    await region.client.send(award(board, "carol", 40))
    await region.client.send(award(board, "carol", 2))
    out, err = await asyncio.wait_for(client.communicate(), 60)

    assert client.returncode == 0, err.decode()
    lines = [json.loads(line) for line in out.decode().splitlines()]
    assert lines[0] == {"event": "connected"}
    scores = [u for u in lines[1:] if u["__typename"] == "ScoreUpdated"]
    assert scores[-1]["userId"] == "carol" and scores[-1]["score"] == 42 and scores[-1]["rank"] == 1


async def test_live_page_shows_awards_without_reloading(
    region: Region, gateway_process: GatewayProcess, tmp_path: Path
) -> None:
    gw = gateway_process
    board = await create_board(gw)
    await region.client.send(award(board, "dave", 5))
    await region.wait_for_total(board, "dave", 5)
    page = f"{gw.base}/live?board={board}&user=erin&friends=zoe,dave,erin"
    browser = await asyncio.create_subprocess_exec(
        node(), str(JS / "live_page.mjs"), page, "erin", "77", str(tmp_path / "live.png"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert browser.stdout is not None
    ready = json.loads(await asyncio.wait_for(browser.stdout.readline(), 60))
    assert ready == {"event": "ready"}
    await wait_for(lambda: _at_least(gw, 1), what="the page's subscription")

    for delta in (70, 7):
        await region.client.send(award(board, "erin", delta))
    out, err = await asyncio.wait_for(browser.communicate(), 90)

    assert browser.returncode == 0, (out.decode()[-2000:], err.decode()[-2000:])
    done = json.loads(out.decode().splitlines()[-1])
    assert done["top"][:2] == [
        {"rank": 1, "userId": "erin", "score": 77},
        {"rank": 2, "userId": "dave", "score": 5},
    ]
    assert done["around"] == ["erin", "dave"]
    assert done["friends"] == [["erin", "1"], ["dave", "2"], ["zoe", "-"]]  # ranked among them, no score last
    assert done["status"].startswith("Live: scores update as they happen")


async def test_live_page_says_not_found_for_an_unknown_board(gateway_process: GatewayProcess) -> None:
    page = f"{gateway_process.base}/live?board=no-such-board&user=erin"
    browser = await asyncio.create_subprocess_exec(
        node(), str(JS / "live_status.mjs"), page, "notfound",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(browser.communicate(), 60)

    assert browser.returncode == 0, (out.decode()[-2000:], err.decode()[-2000:])
    assert json.loads(out.decode().splitlines()[-1]) == {
        "state": "notfound",
        "status": "This leaderboard does not exist",
        "title": 'No leaderboard "no-such-board"',
    }
