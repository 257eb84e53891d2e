"""leaderboardUpdates over graphql-transport-ws and legacy graphql-ws, from real clients."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import websockets
from gql import Client, GraphQLRequest
from gql.transport.websockets import WebsocketsTransport
from redis.asyncio import Redis
from websockets.asyncio.client import connect
from websockets.protocol import State

from schema.redis_keys import positions_key
from tests.integration.gateway.conftest import Boards, Gateway, GatewayFactory, eventually

UPDATES = """subscription($board: ID!, $user: ID) {
  leaderboardUpdates(leaderboardId: $board, userId: $user) {
    __typename
    ... on ScoreUpdated { leaderboardId userId score rank version sequence asOf { positions { partition offset } } }
    ... on RankChanged { userId oldRank newRank sequence }
    ... on TopKChanged { k sequence }
    ... on Resync { reason sequence }
  }
}"""
TRANSPORT_WS = WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL
LEGACY_WS = WebsocketsTransport.APOLLO_SUBPROTOCOL


async def collect(
    gw: Gateway,
    variables: dict[str, Any],
    protocols: list[str] | None,
    until: int,
    sink: list[dict[str, Any]],
) -> None:
    transport = (
        WebsocketsTransport(url=gw.ws_url, subprotocols=protocols)
        if protocols
        else WebsocketsTransport(url=gw.ws_url)
    )
    async with Client(transport=transport) as session:
        async for result in session.subscribe(GraphQLRequest(UPDATES, variable_values=variables)):
            sink.append(result["leaderboardUpdates"])
            if len(sink) >= until:
                return


@pytest.mark.parametrize(
    "protocols", [[TRANSPORT_WS], None], ids=["graphql-transport-ws", "gql-default-legacy-graphql-ws"]
)
async def test_player_and_top_k_updates_reach_gql_subscribers(
    gateway: Gateway, boards: Boards, protocols: list[str] | None
) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 50), ("bob", 40), ("cat", 10)])
    await boards.set_positions({0: 0, 1: 5}, accepted_ms=1_700_000_000_000)
    received: list[dict[str, Any]] = []
    task = asyncio.create_task(collect(gateway, {"board": board.id, "user": "cat"}, protocols, 3, received))
    await eventually(lambda: _subscribed(gateway, board.id, 1))

    sequence = await boards.set_totals(board, [("cat", 60)], hint=True)
    await asyncio.wait_for(task, 10)

    by_type = {u["__typename"]: u for u in received}
    assert by_type["ScoreUpdated"] == {
        "__typename": "ScoreUpdated", "leaderboardId": board.id, "userId": "cat", "score": 60, "rank": 1,
        "version": 2, "sequence": sequence, "asOf": {"positions": [{"partition": 0, "offset": sequence}, {"partition": 1, "offset": 5}]},
    }  # fmt: skip
    assert by_type["RankChanged"] == {
        "__typename": "RankChanged",
        "userId": "cat",
        "oldRank": 3,
        "newRank": 1,
        "sequence": sequence,
    }
    assert by_type["TopKChanged"] == {"__typename": "TopKChanged", "k": 10, "sequence": sequence}


async def _subscribed(gw: Gateway, board_id: str, count: int) -> bool:
    return len(gw.services.hub.mailbox_depths(board_id)) == count


async def test_board_subscribers_get_top_k_changes_only_when_the_top_10_changes(
    gateway: Gateway, boards: Boards
) -> None:
    board = await boards.create()
    await boards.set_totals(board, [(f"u{i:02d}", 100 - i) for i in range(12)])
    await boards.set_positions({0: 0}, accepted_ms=1_700_000_000_000)  # a live projection
    received: list[dict[str, Any]] = []
    task = asyncio.create_task(collect(gateway, {"board": board.id}, [TRANSPORT_WS], 1, received))
    await eventually(lambda: _subscribed(gateway, board.id, 1))

    await boards.set_totals(board, [("u11", 80)], hint=True)  # 12th place -> 12th place: top 10 unchanged
    await asyncio.sleep(0.5)
    assert received == []
    sequence = await boards.set_totals(board, [("u11", 1000)], hint=True)
    await asyncio.wait_for(task, 10)

    assert received == [{"__typename": "TopKChanged", "k": 10, "sequence": sequence}]


async def test_a_gap_in_the_hint_sequence_gives_resync(gateway: Gateway, boards: Boards) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 1)])
    await boards.set_positions({0: 0}, accepted_ms=1_700_000_000_000)  # a live projection
    received: list[dict[str, Any]] = []
    task = asyncio.create_task(collect(gateway, {"board": board.id}, [TRANSPORT_WS], 2, received))
    await eventually(lambda: _subscribed(gateway, board.id, 1))

    first = await boards.set_totals(board, [("ann", 2)], hint=True)
    await eventually(lambda: _received(received, 1))
    await boards.set_totals(board, [("ann", 3)])  # applied, but its hint is lost
    third = await boards.set_totals(board, [("bob", 5)], hint=True)
    await asyncio.wait_for(task, 10)

    assert received[0] == {"__typename": "TopKChanged", "k": 10, "sequence": first}
    assert received[1] == {"__typename": "Resync", "reason": "gap", "sequence": third}


async def _received(sink: list[dict[str, Any]], count: int) -> bool:
    return len(sink) >= count


async def test_unknown_board_is_an_error_message(gateway: Gateway) -> None:
    async with connect(gateway.ws_url, subprotocols=[TRANSPORT_WS]) as ws:
        await ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        await ws.send(
            json.dumps(
                {
                    "id": "1",
                    "type": "subscribe",
                    "payload": {"query": UPDATES, "variables": {"board": "nope"}},
                }
            )
        )
        message = json.loads(await asyncio.wait_for(ws.recv(), 5))

    assert message["type"] == "next"
    assert message["payload"]["errors"][0]["extensions"]["code"] == "NOT_FOUND"


@pytest.mark.parametrize("protocol", [TRANSPORT_WS, LEGACY_WS])
async def test_connection_init_timeout_closes_with_4408(
    gateway_factory: GatewayFactory, protocol: str
) -> None:
    async with gateway_factory(connection_init_timeout_s=0.3) as gw:
        async with connect(gw.ws_url, subprotocols=[protocol]) as silent:
            with pytest.raises(websockets.ConnectionClosed):
                await asyncio.wait_for(silent.recv(), 5)
        assert silent.close_code == 4408

        async with connect(gw.ws_url, subprotocols=[protocol]) as initialised:
            await initialised.send(json.dumps({"type": "connection_init"}))
            assert json.loads(await initialised.recv())["type"] == "connection_ack"
            await asyncio.sleep(0.6)  # past the timeout: an initialised connection stays open
            assert initialised.state is State.OPEN


async def test_subscriptions_per_connection_are_capped(
    gateway_factory: GatewayFactory, boards: Boards
) -> None:
    board = await boards.create()
    async with (
        gateway_factory(max_subscriptions_per_connection=2) as gw,
        connect(gw.ws_url, subprotocols=[TRANSPORT_WS]) as ws,
    ):
        await ws.send(json.dumps({"type": "connection_init"}))
        await ws.recv()
        for op in ("1", "2", "3"):
            payload = {"query": UPDATES, "variables": {"board": board.id}}
            await ws.send(json.dumps({"id": op, "type": "subscribe", "payload": payload}))
        message = json.loads(await asyncio.wait_for(ws.recv(), 5))

    assert message["type"] == "error" and message["id"] == "3"
    assert message["payload"][0]["message"] == "Subscription limit reached"


async def test_websocket_from_a_disallowed_origin_is_refused(gateway_factory: GatewayFactory) -> None:
    async with gateway_factory(allowed_origins=["https://game.example"]) as gw:
        async with connect(gw.ws_url, subprotocols=[TRANSPORT_WS], origin="https://game.example") as ok:
            await ok.send(json.dumps({"type": "connection_init"}))
            assert json.loads(await ok.recv())["type"] == "connection_ack"
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with connect(gw.ws_url, subprotocols=[TRANSPORT_WS], origin="https://evil.example"):
                pass

    assert refused.value.response.status_code == 403


async def _follow(url: str, board: str, user: str, seen: list[str]) -> None:
    async with connect(url, subprotocols=[TRANSPORT_WS]) as ws:
        await ws.send(json.dumps({"type": "connection_init"}))
        await ws.recv()
        payload = {"query": UPDATES, "variables": {"board": board, "user": user}}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
        async for raw in ws:
            message = json.loads(raw)
            if (
                message["type"] == "next"
                and message["payload"]["data"]["leaderboardUpdates"]["__typename"] == "TopKChanged"
            ):
                seen.append(user)
                return


async def test_many_players_joining_at_once_share_reads_and_all_get_updates(
    gateway: Gateway, boards: Boards
) -> None:
    board = await boards.create()
    users = [f"j{i:03d}" for i in range(150)]  # more than the Redis pool has connections
    await boards.set_totals(board, [(u, i) for i, u in enumerate(users)])
    await boards.set_positions({0: 0}, accepted_ms=1_700_000_000_000)  # a live projection
    seen: list[str] = []
    tasks = [asyncio.create_task(_follow(gateway.ws_url, board.id, u, seen)) for u in users]
    await eventually(lambda: _subscribed(gateway, board.id, len(users)), within=30)

    await boards.set_totals(board, [("champion", 10_000)], hint=True)
    await asyncio.wait_for(asyncio.gather(*tasks), 20)

    assert sorted(seen) == users


async def test_a_projection_being_rebuilt_reads_stale_and_subscribers_resync_never_going_backwards(
    gateway: Gateway, boards: Boards, redis_client: Redis
) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 50), ("bob", 40)])
    await boards.set_positions({0: 7}, accepted_ms=1_700_000_000_000)
    received: list[dict[str, Any]] = []
    task = asyncio.create_task(
        collect(gateway, {"board": board.id, "user": "bob"}, [TRANSPORT_WS], 99, received)
    )
    await eventually(lambda: _subscribed(gateway, board.id, 1))
    prefix = gateway.settings.redis.key_prefix

    first = await boards.set_totals(board, [("bob", 60)], hint=True)  # bob moves to #1
    await eventually(lambda: _received(received, 3))
    await redis_client.hset(positions_key(prefix), "rebuilding", "1")  # Redis lost the board: rebuilding
    await boards.wipe(board)
    await boards.publish_hint(board, first + 1, [])
    await eventually(lambda: _received(received, 4))
    read_while_rebuilding = await gateway.query(
        "query($id: ID!) { leaderboard(id: $id) { top { asOf { stale } } } }", {"id": board.id}
    )
    boards.versions.clear()  # the rebuild writes the totals again, then the projection is live
    await boards.set_totals(board, [("ann", 50), ("bob", 60)])
    await redis_client.hdel(positions_key(prefix), "rebuilding")
    await boards.publish_hint(board, 1, [])  # and its hint count started again
    await eventually(lambda: _received(received, 5))
    await boards.set_totals(board, [("bob", 70)])
    await boards.publish_hint(board, 2, [("bob", 70)])
    await eventually(lambda: _received(received, 6))
    task.cancel()

    kinds = [(u["__typename"], u.get("reason")) for u in received]
    assert kinds[:3] == [("ScoreUpdated", None), ("RankChanged", None), ("TopKChanged", None)]
    assert kinds[3] == ("Resync", "projection_rebuilding")
    assert kinds[4] == ("Resync", "sequence_reset")
    assert kinds[5] == ("ScoreUpdated", None)
    assert [u for u in received if u["__typename"] == "RankChanged" and u["newRank"] is None] == []
    sequences = [u["sequence"] for u in received]
    assert sequences == sorted(sequences) and sequences[-1] > first + 1
    assert read_while_rebuilding["data"]["leaderboard"]["top"]["asOf"]["stale"] is True
