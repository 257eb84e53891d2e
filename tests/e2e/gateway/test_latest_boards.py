"""End to end on one region: a LATEST board created through GraphQL keeps the newest award's score.

The region's real processes and ``python -m gateway``: the board is created with
``aggregation: LATEST``, a delta is refused by the intake naming the field, and an older award that
arrives after a newer one leaves the newer score in the gateway's read.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.e2e.gateway.conftest import GatewayProcess, wait_for
from tests.harness import Region

ADMIN = {"Authorization": "Bearer dev-admin-token"}
CREATE = """mutation($id: ID!) {
  createLeaderboard(input: {id: $id, name: "Latest", aggregation: LATEST, tiePolicy: FIRST_REACHED}) {
    id aggregation
  }
}"""
PLAYER = """query($b: ID!) {
  leaderboard(id: $b) { player(userId: "alice") { score version asOf { positions { partition offset } } } }
}"""


def score(board: str, match: str, value: int, occurred_at: str) -> dict[str, Any]:
    return {"matchId": match, "leaderboardId": board, "userId": "alice", "awardType": "rating",
            "score": value, "occurredAt": occurred_at}  # fmt: skip


async def _gql(gw: GatewayProcess, query: str, board: str, headers: dict[str, str] | None = None) -> Any:
    async with httpx.AsyncClient() as http:
        response = await http.post(gw.url, json={"query": query, "variables": {"b": board, "id": board}},
                                   headers=headers)  # fmt: skip
    return response.json()


async def test_an_older_award_arriving_later_leaves_the_newer_score(
    region: Region, gateway_process: GatewayProcess
) -> None:
    gw = gateway_process
    board = f"latest-{uuid.uuid4().hex[:10]}"
    created = await _gql(gw, CREATE, board, ADMIN)
    assert created["data"]["createLeaderboard"] == {"id": board, "aggregation": "LATEST"}

    delta = {**score(board, "m0", 5, "2026-01-01T00:00:00Z"), "delta": 5}
    del delta["score"]
    refused = await region.client.send(delta)
    assert refused.status_code == 400
    fields = refused.json()["error"]["fields"]
    assert fields == [{"field": "delta", "rule": f"board {board} is LATEST: send score instead"}]

    newer = await region.client.send(score(board, "m2", 70, "2026-01-01T12:00:00Z"))
    await region.wait_for_total(board, "alice", 70)
    older = await region.client.send(score(board, "m1", 90, "2026-01-01T11:00:00Z"))
    assert newer.status_code == older.status_code == 202
    landed = older.json()["accepted"][0]
    found: dict[str, Any] = {}

    async def covers_the_older_award() -> bool:
        player = (await _gql(gw, PLAYER, board))["data"]["leaderboard"]["player"]
        found.update(player or {})
        return bool(player) and any(
            p["partition"] == landed["partition"] and p["offset"] >= landed["offset"]
            for p in player["asOf"]["positions"]
        )

    await wait_for(covers_the_older_award, what="a read whose asOf covers the older award")
    # the older award was applied (its own version) and the newer one still holds the score
    assert (found["score"], found["version"]) == (70, 2)
