"""Every id argument is checked at the edge with the intake's rules: a bad id is BAD_USER_INPUT
naming the argument and the rule, never a read of someone else's rank."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.integration.gateway.conftest import Boards, Gateway
from tests.integration.gateway.test_admin import ADMIN, CREATE
from tests.integration.gateway.test_subscriptions import TRANSPORT_WS, UPDATES

EMPTY = "must be 1..128 characters, got 0"
BOARD_RULE = "must be 1..128 of letters, digits and . _ : -, starting with a letter or digit"


@pytest.mark.parametrize(
    ("field", "user", "rule"),
    [
        ("player(userId: $user) { rank userId }", "", EMPTY),
        ("context(userId: $user) { player { rank userId } }", "", EMPTY),
        ("player(userId: $user) { rank }", "   ", "must not be only white space"),
        (
            "context(userId: $user, range: 1) { player { rank } }",
            "a\x00b",
            "must contain printable characters only",
        ),
        ("player(userId: $user) { rank }", "x" * 129, "must be 1..128 characters, got 129"),
    ],
    ids=["player-empty", "context-empty", "player-blank", "context-control", "player-too-long"],
)
async def test_a_bad_user_id_is_refused_not_read(
    gateway: Gateway, boards: Boards, field: str, user: str, rule: str
) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 30), ("bob", 20), ("cat", 10)])

    body = await gateway.query(
        f"query($id: ID!, $user: ID!) {{ leaderboard(id: $id) {{ {field} }} }}",
        {"id": board.id, "user": user},
    )

    assert body["data"]["leaderboard"] is not None
    assert body["data"]["leaderboard"].get("player", body["data"]["leaderboard"].get("context")) is None
    error = body["errors"][0]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["message"] == f"userId: {rule}"


@pytest.mark.parametrize("board_id", ["", "-dash-first", "has space", "x" * 129])
async def test_a_bad_board_id_is_refused(gateway: Gateway, board_id: str) -> None:
    body = await gateway.query("query($id: ID!) { leaderboard(id: $id) { id } }", {"id": board_id})

    assert body["data"] == {"leaderboard": None}
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert body["errors"][0]["message"] == f"id: {BOARD_RULE}"


async def test_a_bad_board_id_in_create_leaderboard_names_the_input_field(gateway: Gateway) -> None:
    body = await gateway.query(CREATE, {"input": {"id": "bad id", "name": "x"}}, headers=ADMIN)

    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert body["errors"][0]["message"] == f"input.id: {BOARD_RULE}"


async def _first_message(gateway: Gateway, variables: dict[str, Any]) -> dict[str, Any]:
    async with connect(gateway.ws_url, subprotocols=[TRANSPORT_WS]) as ws:
        await ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        payload = {"query": UPDATES, "variables": variables}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        return dict(json.loads(await asyncio.wait_for(ws.recv(), 5)))


async def test_subscription_ids_are_checked(gateway: Gateway, boards: Boards) -> None:
    board = await boards.create()

    bad_board = await _first_message(gateway, {"board": "no such board"})
    bad_user = await _first_message(gateway, {"board": board.id, "user": ""})

    assert bad_board["payload"]["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert bad_board["payload"]["errors"][0]["message"] == f"leaderboardId: {BOARD_RULE}"
    assert bad_user["payload"]["errors"][0]["message"] == f"userId: {EMPTY}"
