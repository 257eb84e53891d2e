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

from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from tests.integration.gateway.conftest import Boards, GatewayFactory, eventually
from tests.integration.gateway.test_subscriptions import TRANSPORT_WS

ROUNDS = 1000
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

    async def read_until_resync(self, within_s: float = 30.0) -> None:
        """Read until a Resync arrived (a busy gateway may pause longer than a quiet period before
        sending it), then what follows until the socket is quiet."""
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
        await client.open()
        payload = {"query": UPDATES, "variables": {"board": board.id, "user": "u00"}}
        await client.send({"id": "slow", "type": "subscribe", "payload": payload})
        await eventually(lambda: _subscribed(gw.services.hub.mailbox_depths(board.id)))

        deepest = 0
        for i in range(ROUNDS):  # the subscriber reads nothing meanwhile
            await boards.set_totals(board, [("u00", 1000 + i), (f"u{1 + i % 19:02d}", 2000 + i)], hint=True)
            deepest = max([deepest, *gw.services.hub.mailbox_depths(board.id)])
            await asyncio.sleep(0)
        await client.read_until_resync()
        client.close()

    updates = [m["payload"]["data"]["leaderboardUpdates"] for m in client.messages if m["type"] == "next"]
    resyncs = [u for u in updates if u["__typename"] == "Resync"]
    assert resyncs and resyncs[0]["reason"] == "slow_subscriber"
    assert deepest <= 4  # at most one pending update of each kind, however far behind
    assert len(updates) < ROUNDS  # coalesced, not buffered
    # Nothing is lost for good: after the last Resync (which tells the client to refetch) the
    # updates that follow end with the latest score.
    last_resync = max(i for i, u in enumerate(updates) if u["__typename"] == "Resync")
    later_scores = [u["score"] for u in updates[last_resync + 1 :] if u["__typename"] == "ScoreUpdated"]
    assert later_scores == [] or later_scores[-1] == 1000 + ROUNDS - 1


def _is_resync(message: dict[str, Any]) -> bool:
    return message["type"] == "next" and message["payload"]["data"]["leaderboardUpdates"]["__typename"] == "Resync"


async def _subscribed(depths: list[int]) -> bool:
    return len(depths) == 1
