"""The hints of a hidden player, on the real processor, projector and lifecycle worker, with the gateway
in-process: the projector's hint of a hide names the player as leaving, never with their total (as a
removal); a restore's names them with their score (as a new entry); a subscriber following the
player is told RankChanged to null and TopKChanged, and never their score while hidden."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import msgspec
from cassandra.cluster import Session
from gql import Client, GraphQLRequest
from gql.transport.websockets import WebsocketsTransport
from redis.asyncio import Redis

from regions.core.boards import Board
from regions.runtime.settings import Settings
from schema.redis_keys import hints_channel
from tests.conftest import RegionFactory
from tests.harness import Region, points
from tests.integration.gateway.conftest import Gateway, serve_gateway
from tests.integration.regions.test_corrections import _members, _region

ADMIN = {"Authorization": "Bearer dev-admin-token"}
UPDATES = """subscription($board: ID!, $user: ID) { leaderboardUpdates(leaderboardId: $board, userId: $user) {
  __typename ... on ScoreUpdated { userId score rank } ... on RankChanged { userId oldRank newRank }
  ... on TopKChanged { k } } }"""
ACT = """mutation($b: ID!, $u: ID!) { %s(leaderboardId: $b, userId: $u, reason: "ticket 7") { sequence } }"""
TOP = """query($b: ID!) { leaderboard(id: $b) { top(k: 3) { entries { userId } } } }"""


async def _follow(gw: Gateway, board_id: str, sink: list[dict[str, Any]]) -> None:
    async with Client(transport=WebsocketsTransport(url=gw.ws_url)) as session:
        variables = {"board": board_id, "user": "bob"}
        async for result in session.subscribe(GraphQLRequest(UPDATES, variable_values=variables)):
            sink.append(result["leaderboardUpdates"])


@contextlib.asynccontextmanager
async def _hints(redis: Redis, channel: str) -> AsyncIterator[list[dict[str, Any]]]:
    """Every hint published on ``channel`` meanwhile, decoded."""
    received: list[dict[str, Any]] = []
    pubsub = redis.pubsub()
    await pubsub.subscribe(channel)

    async def read() -> None:
        async for message in pubsub.listen():
            if message["type"] == "message":
                received.append(msgspec.json.decode(message["data"]))

    task = asyncio.create_task(read())
    try:
        yield received
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await pubsub.aclose()


def _named(hints: list[dict[str, Any]], user: str) -> list[dict[str, Any]]:
    return [u for h in hints for u in h.get("users", []) if u["userId"] == user]


async def test_a_hidden_player_leaves_in_hints_and_subscriptions_and_comes_back_as_a_new_entry(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session, redis_client: Redis
) -> None:
    region = await _region(region_factory, topics)
    board = Board(f"modh-{uuid.uuid4().hex[:8]}", "hinted", region.settings.region)
    await region.create_board(board)
    for user, amount in (("ann", 50), ("bob", 40), ("cat", 30)):
        assert (await region.client.send(points(board.id, f"m-{user}", user, amount))).status_code == 202
    await region.wait_for_total(board.id, "cat", 30)
    channel = hints_channel(region.settings.redis.key_prefix, board.id)
    updates: list[dict[str, Any]] = []

    async with (
        serve_gateway(region.settings, redis_client, cassandra_session) as gw,
        _hints(redis_client, channel) as hints,
    ):
        subscriber = asyncio.create_task(_follow(gw, board.id, updates))
        await region.wait_until(lambda: _members(gw, board.id), what="subscribed")
        before = len(updates)  # (what a subscriber is told at first: bob's score, before the hide)
        await gw.query(ACT % "hidePlayer", {"b": board.id, "u": "bob"}, headers=ADMIN)
        await Region.wait_until(
            lambda: _told(updates, {"userId": "bob", "oldRank": 2, "newRank": None}), 30, "hidden"
        )
        await Region.wait_until(lambda: _top_told(updates, before), 30, "the top told")
        hidden_hints, while_hidden = list(hints), updates[before:]
        await gw.query(ACT % "restorePlayer", {"b": board.id, "u": "bob"}, headers=ADMIN)
        await Region.wait_until(
            lambda: _told(updates, {"userId": "bob", "oldRank": None, "newRank": 2}), 30, "back"
        )
        await Region.wait_until(lambda: _has_score(hints, "bob"), 30, "the restore's hint")
        top = await gw.query(TOP, {"b": board.id})
        subscriber.cancel()

    [left] = _named(hidden_hints, "bob")
    assert left == {"userId": "bob", "version": left["version"], "left": True}  # no score
    assert _named(hints, "bob")[-1] == {"userId": "bob", "score": 40, "version": left["version"] + 1}
    assert not [
        u for u in while_hidden if u["__typename"] == "ScoreUpdated"
    ]  # never bob's score while hidden
    back = updates[len(while_hidden) + before :]
    assert {"__typename": "ScoreUpdated", "userId": "bob", "score": 40, "rank": 2} in back  # a new entry
    assert {"__typename": "TopKChanged", "k": 10} in back
    assert [e["userId"] for e in top["data"]["leaderboard"]["top"]["entries"]] == ["ann", "bob", "cat"]


async def _told(updates: list[dict[str, Any]], change: dict[str, Any]) -> bool:
    return {"__typename": "RankChanged", **change} in updates


async def _top_told(updates: list[dict[str, Any]], since: int) -> bool:
    return {"__typename": "TopKChanged", "k": 10} in updates[since:]


async def _has_score(hints: list[dict[str, Any]], user: str) -> bool:
    return any("score" in u for u in _named(hints, user))
