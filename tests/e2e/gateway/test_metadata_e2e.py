"""End to end in one region: an award's metadata, sent through the intake, is what the gateway shows
for the award that holds the player's score; bad metadata is refused by name."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.e2e.gateway.conftest import GatewayProcess, wait_for
from tests.harness import Region

ADMIN = {"Authorization": "Bearer dev-admin-token"}
TOP = 'query($b: ID!) { leaderboard(id: $b) { top(k: 5) { entries { userId score metadata } } } }'


def _award(board: str, user: str, score: int, metadata: object = None) -> dict[str, Any]:
    body: dict[str, Any] = {"matchId": f"m-{uuid.uuid4().hex[:10]}", "leaderboardId": board, "userId": user,
                            "awardType": "run", "score": score}  # fmt: skip
    if metadata is not None:
        body["metadata"] = metadata
    return body


async def test_the_gateway_shows_the_metadata_of_the_award_that_holds_the_best(
    region: Region, gateway_process: GatewayProcess
) -> None:
    gw, board = gateway_process, f"e2e-meta-{uuid.uuid4().hex[:8]}"
    create = "mutation($id: ID!) { createLeaderboard(input: {id: $id, name: \"Runs\", aggregation: MAX}) { id } }"
    async with httpx.AsyncClient() as http:
        created = (await http.post(gw.url, json={"query": create, "variables": {"id": board}}, headers=ADMIN)).json()
        assert created["data"]["createLeaderboard"] == {"id": board}

        refused = await region.client.send(_award(board, "ann", 1, ["not", "an", "object"]))
        assert refused.status_code == 400 and "metadata" in refused.text and "JSON object" in refused.text
        for score, meta in ((70, {"replay": "r70", "map": "dune"}), (90, {"replay": "r90"}), (80, None)):
            assert (await region.client.send(_award(board, "ann", score, meta))).status_code == 202
        assert (await region.client.send(_award(board, "bob", 60))).status_code == 202

        async def shown() -> bool:
            body = (await http.post(gw.url, json={"query": TOP, "variables": {"b": board}})).json()
            entries = body["data"]["leaderboard"]["top"]["entries"]
            return entries == [
                {"userId": "ann", "score": 90, "metadata": {"replay": "r90"}},
                {"userId": "bob", "score": 60, "metadata": None},
            ]

        await wait_for(shown, within=60, what="the best award's metadata on the board")
