"""leaderboardUpdates with userIds: one subscription follows several players (each once), gets each
one's ScoreUpdated and RankChanged and the board's own updates once; over the cap is LIMIT_EXCEEDED."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from gql import Client, GraphQLRequest
from gql.transport.exceptions import TransportQueryError
from gql.transport.websockets import WebsocketsTransport

from tests.integration.gateway.conftest import Boards, Gateway, eventually

FOLLOW = """subscription($board: ID!, $user: ID, $users: [ID!]) {
  leaderboardUpdates(leaderboardId: $board, userId: $user, userIds: $users) {
    __typename
    ... on ScoreUpdated { userId score rank sequence }
    ... on RankChanged { userId oldRank newRank sequence }
    ... on TopKChanged { k sequence }
  }
}"""


async def _collect(gw: Gateway, variables: dict[str, Any], until: int, sink: list[dict[str, Any]]) -> None:
    transport = WebsocketsTransport(url=gw.ws_url, subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL])
    async with Client(transport=transport) as session:
        async for result in session.subscribe(GraphQLRequest(FOLLOW, variable_values=variables)):
            sink.append(result["leaderboardUpdates"])
            if len(sink) >= until:
                return


async def _mailboxes(gw: Gateway, board_id: str, count: int) -> bool:
    return len(gw.services.hub.mailbox_depths(board_id)) == count


async def test_a_subscription_follows_every_listed_player_and_tells_the_board_once(
    gateway: Gateway, boards: Boards
) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 50), ("bob", 40), ("cat", 10), ("dan", 5)])
    await boards.set_positions({0: 0}, accepted_ms=1_700_000_000_000)
    received: list[dict[str, Any]] = []
    variables = {"board": board.id, "user": "dan", "users": ["cat", "dan", "cat"]}
    task = asyncio.create_task(_collect(gateway, variables, 5, received))
    await eventually(lambda: _mailboxes(gateway, board.id, 2))  # one per player followed

    sequence = await boards.set_totals(board, [("cat", 60), ("dan", 45)], hint=True)
    await asyncio.wait_for(task, 10)

    assert sorted(received, key=lambda u: (u["__typename"], u.get("userId", ""))) == [
        {"__typename": "RankChanged", "userId": "cat", "oldRank": 3, "newRank": 1, "sequence": sequence},
        {"__typename": "RankChanged", "userId": "dan", "oldRank": 4, "newRank": 3, "sequence": sequence},
        {"__typename": "ScoreUpdated", "userId": "cat", "score": 60, "rank": 1, "sequence": sequence},
        {"__typename": "ScoreUpdated", "userId": "dan", "score": 45, "rank": 3, "sequence": sequence},
        {"__typename": "TopKChanged", "k": 10, "sequence": sequence},
    ]


async def test_more_players_than_the_cap_is_limit_exceeded(gateway: Gateway, boards: Boards) -> None:
    board = await boards.create()
    users = [f"u{i}" for i in range(gateway.settings.gateway.max_followed_players + 1)]

    with pytest.raises(TransportQueryError) as refused:
        await _collect(gateway, {"board": board.id, "users": users}, 1, [])

    assert refused.value.errors is not None
    assert refused.value.errors[0]["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert "userIds must list at most 50 players, got 51" in refused.value.errors[0]["message"]
