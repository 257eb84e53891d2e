"""A subscriber that stops reading gets a Resync; its pending updates stay bounded meanwhile.

The slow client is a raw socket driven by websockets' sans-I/O protocol: it really stops reading,
so the kernel buffers fill and the gateway's sends block, as with a stalled mobile client.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from typing import Any

from prometheus_client import REGISTRY
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from regions.core.boards import Board
from tests.integration.gateway.conftest import Boards, Gateway, GatewayFactory, eventually
from tests.integration.gateway.test_subscriptions import TRANSPORT_WS

MAX_ROUNDS = 20_000
AFTER_RESYNC = 500
POSITIONS = "asOf { positions { region partition offset } }"
UPDATES = """subscription($board: ID!, $user: ID) {
  leaderboardUpdates(leaderboardId: $board, userId: $user) {
    __typename
    ... on ScoreUpdated { score sequence %s }
    ... on RankChanged { newRank sequence %s }
    ... on TopKChanged { sequence %s }
    ... on Resync { reason sequence }
  }
}""".replace("%s", POSITIONS)


class StalledClient:
    """graphql-transport-ws over a socket that reads only when asked to."""

    def __init__(self, url: str, port: int) -> None:
        self._url, self._port = url, port
        self._protocol = ClientProtocol(parse_uri(url), subprotocols=[TRANSPORT_WS])
        self.messages: list[dict[str, Any]] = []

    async def open(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", self._port))
        sock.setblocking(False)
        self._reader, self._writer = await asyncio.open_connection(sock=sock, limit=4096)
        self._protocol.send_request(self._protocol.connect())
        self._flush()
        await self._read_until(lambda: self._protocol.handshake_exc is None and self._opened)
        await self.send({"type": "connection_init"})
        await self._read_until(lambda: any(m["type"] == "connection_ack" for m in self.messages))

    _opened = False

    async def send(self, message: dict[str, Any]) -> None:
        self._protocol.send_text(json.dumps(message).encode())
        self._flush()
        await self._writer.drain()

    def _flush(self) -> None:
        self._writer.write(b"".join(self._protocol.data_to_send()))

    async def _read_until(self, done: Any, quiet_s: float = 5.0) -> None:
        while not done():
            data = await asyncio.wait_for(self._reader.read(65536), quiet_s)
            if not data:
                return
            self._receive(data)

    def _receive(self, data: bytes) -> None:
        self._protocol.receive_data(data)
        for event in self._protocol.events_received():
            if isinstance(event, Response):
                self._opened = True
            elif isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                self.messages.append(json.loads(event.data))
        self._flush()

    async def read_all(self, quiet_s: float = 1.5) -> None:
        with contextlib.suppress(TimeoutError):
            await self._read_until(lambda: False, quiet_s)

    async def read_until_resync(self, within_s: float = 60.0) -> None:
        """Read until a Resync arrived (a busy gateway may pause longer than a quiet period before
        sending it; the server's pings arrive meanwhile), then what follows until the socket is
        quiet."""
        async with asyncio.timeout(within_s):
            await self._read_until(lambda: any(_is_resync(m) for m in self.messages), within_s)
        await self.read_all()

    def close(self) -> None:
        self._writer.close()


async def test_slow_subscriber_gets_resync_and_stays_bounded(
    gateway_factory: GatewayFactory, boards: Boards
) -> None:
    board = await boards.create()
    await boards.set_totals(board, [(f"u{i:02d}", i) for i in range(20)])
    await boards.set_positions(
        {p: 10**9 + p for p in range(200)}, accepted_ms=1_700_000_000_000
    )  # ~10 kB updates
    async with gateway_factory(hint_min_interval_s=0, resync_after_coalesced=8) as gw:
        client = StalledClient(gw.ws_url, gw.port)
        try:
            await _subscribe(client, gw, board)
            rounds, deepest = await _change_until_resync(boards, board, gw)
            for extra in range(AFTER_RESYNC):  # still reading nothing
                await boards.set_totals(board, [("u00", 1000 + rounds + extra)], hint=True)
                deepest = max([deepest, *gw.services.hub.mailbox_depths(board.id)])
                await asyncio.sleep(0)
            await client.read_until_resync()
        finally:
            client.close()

    updates = [m["payload"]["data"]["leaderboardUpdates"] for m in client.messages if m["type"] == "next"]
    resyncs = [u for u in updates if u["__typename"] == "Resync"]
    assert resyncs and resyncs[0]["reason"] == "slow_subscriber"
    assert deepest <= 4  # at most one pending update of each kind, however far behind
    # Coalesced, not buffered: u00's score changed in each of the rounds after the first Resync,
    # and far fewer of its changes reached the subscriber.
    first_resync = next(i for i, u in enumerate(updates) if u["__typename"] == "Resync")
    assert len([u for u in updates[first_resync:] if u["__typename"] == "ScoreUpdated"]) < AFTER_RESYNC / 10
    # Nothing is lost for good: after the last Resync (which tells the client to refetch) the
    # updates that follow end with the latest score.
    last_resync = max(i for i, u in enumerate(updates) if u["__typename"] == "Resync")
    later_scores = [u["score"] for u in updates[last_resync + 1 :] if u["__typename"] == "ScoreUpdated"]
    assert later_scores == [] or later_scores[-1] == 1000 + rounds + AFTER_RESYNC - 1


async def test_a_subscriber_that_stopped_reading_does_not_hold_up_shutdown(
    gateway_factory: GatewayFactory, boards: Boards
) -> None:
    """Its close handshake never completes; the gateway cancels it after its shutdown grace."""
    board = await boards.create()
    await boards.set_positions({p: 10**9 + p for p in range(200)}, accepted_ms=1_700_000_000_000)
    clients: list[StalledClient] = []
    async with gateway_factory(hint_min_interval_s=0, resync_after_coalesced=8, shutdown_grace_s=1) as gw:
        client = StalledClient(gw.ws_url, gw.port)
        clients.append(client)
        await _subscribe(client, gw, board)
        await _change_until_resync(boards, board, gw)  # the gateway's sends to it are blocked
    # The gateway stopped (its server task ended) while the client still neither reads nor closes.
    clients[0].close()


def _slow_resyncs() -> float:
    return REGISTRY.get_sample_value("lb_gateway_resyncs_total", {"reason": "slow_subscriber"}) or 0.0


def _is_resync(message: dict[str, Any]) -> bool:
    return (
        message["type"] == "next"
        and message["payload"]["data"]["leaderboardUpdates"]["__typename"] == "Resync"
    )


async def _subscribe(client: StalledClient, gw: Gateway, board: Board) -> None:
    """``client`` follows u00 on ``board``, and the gateway tells it updates."""
    await client.open()
    payload = {"query": UPDATES, "variables": {"board": board.id, "user": "u00"}}
    await client.send({"id": "slow", "type": "subscribe", "payload": payload})
    await eventually(lambda: _subscribed(gw.services.hub.mailbox_depths(board.id)))


async def _subscribed(depths: list[int]) -> bool:
    return len(depths) == 1


async def _change_until_resync(boards: Boards, board: Board, gw: Gateway) -> tuple[int, int]:
    """Change the board until the gateway told a subscriber to resync; the rounds it took and the
    most updates its mailbox held meanwhile. The socket's buffers take megabytes first, so how many
    changes that takes depends on how fast the gateway reads them."""
    deepest, rounds, resyncs_before = 0, 0, _slow_resyncs()
    while _slow_resyncs() == resyncs_before:
        assert rounds < MAX_ROUNDS, "no subscriber was told to resync"
        totals = [("u00", 1000 + rounds), (f"u{1 + rounds % 19:02d}", 2000 + rounds)]
        await boards.set_totals(board, totals, hint=True)
        deepest = max([deepest, *gw.services.hub.mailbox_depths(board.id)])
        rounds += 1
        await asyncio.sleep(0)
    return rounds, deepest
