"""``python -m gateway`` as its own process: it starts while Cassandra is down and gets ready when
Cassandra comes, logs client errors in one line, and stops without a traceback."""

from __future__ import annotations

import asyncio
import json
import signal
import uuid
from pathlib import Path

import httpx
import pytest
from cassandra.cluster import Session
from websockets.asyncio.client import connect

from regions.core.boards import Board
from regions.runtime.settings import Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from tests.e2e.gateway.conftest import GatewayProcess, start_gateway, wait_for
from tests.harness import region_env
from tests.proxy import TcpProxy


async def _readyz(gw: GatewayProcess) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.get(gw.base + "/readyz")


async def _is_ready(gw: GatewayProcess) -> bool:
    return (await _readyz(gw)).status_code == 200


async def test_the_gateway_starts_while_cassandra_is_down_and_is_ready_once_it_is_back(
    settings: Settings, cassandra_session: object, tmp_path: Path
) -> None:
    proxy = TcpProxy("127.0.0.1", settings.cassandra.port)
    port = await proxy.start()
    proxy.cut()
    env = {**region_env(settings), "LB_CASSANDRA__PORT": str(port)}
    try:
        async with start_gateway(env, tmp_path / "gateway.log", wait_ready=False) as gw:
            await wait_for(lambda: _answers(gw), what="the gateway's /readyz")
            down = await _readyz(gw)
            proxy.heal()
            await wait_for(lambda: _is_ready(gw), within=60, what="readiness after Cassandra is back")
            up = await _readyz(gw)
    finally:
        await proxy.close()

    assert down.status_code == 503
    assert down.json()["checks"]["board_catalog"] is False
    assert down.json()["stores"]["cassandra"] == "connecting"
    assert up.json()["stores"]["cassandra"] == "up"


async def _subscribed(gw: GatewayProcess) -> bool:
    return await gw.subscriptions() == 1


async def _answers(gw: GatewayProcess) -> bool:
    try:
        await _readyz(gw)
    except httpx.HTTPError:
        return False
    return True


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_client_errors_are_one_line_at_info_and_a_stop_leaves_no_traceback(
    settings: Settings, cassandra_session: Session, tmp_path: Path, stop: signal.Signals
) -> None:
    board = Board(f"stop-{uuid.uuid4().hex[:10]}", "Stop", settings.region)
    await CassandraCatalog(cassandra_session).create(board)
    log = tmp_path / "gateway.log"
    async with start_gateway(region_env(settings), log) as gw:
        async with httpx.AsyncClient() as http:
            await http.post(gw.url, json={"query": '{ leaderboard(id: "") { id } }'})
        async with connect(gw.ws_url, subprotocols=["graphql-transport-ws"]) as ws:
            await ws.send(json.dumps({"type": "connection_init"}))
            await ws.recv()
            query = 'subscription($b: ID!) { leaderboardUpdates(leaderboardId: $b, userId: "ann") { __typename } }'
            payload = {"query": query, "variables": {"b": board.id}}
            await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": payload}))
            await wait_for(lambda: _subscribed(gw), what="the subscription")
            gw.process.send_signal(stop)
            await asyncio.wait_for(gw.process.wait(), 20)

    text = log.read_text()
    assert "INFO gateway BAD_USER_INPUT: id: must be 1..128" in text
    assert "Traceback" not in text and "CancelledError" not in text, text
