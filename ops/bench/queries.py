"""The gateway's reads as the benchmarks send them (``ops/bench/reads`` and ``ops/bench/scale``).

The GraphQL documents of top-10, player, context, pages of 100 (from a rank, after a cursor) and
friends lists (``players(userIds)``), the raw HTTP/1.1 requests that carry them
(``post``, and ``get`` for the plain reference and persisted queries), the kit's closed and paced
loops run over keep-alive connections that fail on any answer but a 200 without errors, the end
cursors of pages at random ranks for the pages after a cursor, and a server process (the gateway,
the plain Starlette reference) started until it answers and stopped.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import httpx

from ops.bench import kit
from ops.stack import ROOT, log_tail, spawn, terminate, wait_ready

TOP = '{"query":"query($b: ID!) { leaderboard(id: $b) { top(k: 10) { entries { rank userId score } asOf { positions { partition offset } newestAcceptedAt } } } }","variables":{"b":"%s"}}'
PLAYER = '{"query":"query($b: ID!, $u: ID!) { leaderboard(id: $b) { player(userId: $u) { rank userId score asOf { positions { partition offset } } } } }","variables":{"b":"%s","u":"%s"}}'
CONTEXT = '{"query":"query($b: ID!, $u: ID!) { leaderboard(id: $b) { context(userId: $u, range: 4) { above { rank userId score } player { rank userId score } below { rank userId score } asOf { positions { partition offset } } } } }","variables":{"b":"%s","u":"%s"}}'
PAGE_FROM = '{"query":"query($b: ID!, $r: Int) { leaderboard(id: $b) { entries(first: 100, fromRank: $r) { entries { rank userId score } pageInfo { endCursor hasNextPage } asOf { positions { partition offset } } } } }","variables":{"b":"%s","r":%d}}'
PAGE_AFTER = '{"query":"query($b: ID!, $c: String) { leaderboard(id: $b) { entries(first: 100, after: $c) { entries { rank userId score } pageInfo { endCursor hasNextPage } asOf { positions { partition offset } } } } }","variables":{"b":"%s","c":"%s"}}'
LISTED = '{"query":"query($b: ID!, $u: [ID!]!) { leaderboard(id: $b) { players(userIds: $u) { entries { userId rankAmong player { rank userId score } } asOf { positions { partition offset } } } } }","variables":{"b":"%s","u":%s}}'

LOGS = ROOT / ".data" / "logs"


def uncached(document: str) -> str:
    """``document`` with a nonce extension, its first ``%d``: each request a body the gateway's
    answer cache has not seen, so every one is read."""
    return document.replace('"variables"', '"extensions":{"nonce":%d},"variables"', 1)


def post(port: int, body: str) -> bytes:
    data = body.encode()
    return (
        f"POST /graphql HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(data)}\r\n\r\n"
    ).encode() + data


def get(port: int, path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n".encode()


async def ask(connection: kit.Connection, request: bytes) -> bytes:
    """The body of the answer; a RuntimeError for any answer but a 200 without GraphQL errors."""
    status, body = await connection.exchange(request)
    if status != 200 or b'"errors"' in body:
        raise RuntimeError(f"bad response: {status} {body[:300]!r}")
    return body


async def _over_connections(
    port: int, make: Callable[[], bytes], concurrency: int, loop: Callable[[kit.Send], Awaitable[kit.Run]]
) -> kit.Run:
    connections = [await kit.Connection(port).open() for _ in range(concurrency)]
    try:
        return await loop(lambda worker: ask(connections[worker], make()))
    finally:
        for connection in connections:
            connection.close()


async def closed_loop(
    label: str, port: int, make: Callable[[], bytes], concurrency: int, seconds: float
) -> kit.Run:
    """``kit.closed_loop`` of the requests ``make`` gives, on ``concurrency`` connections to ``port``."""
    return await _over_connections(
        port, make, concurrency, lambda send: kit.closed_loop(label, send, concurrency, seconds)
    )


async def paced(
    label: str, port: int, make: Callable[[], bytes], concurrency: int, rate: float, seconds: float
) -> kit.Run:
    """``kit.paced`` of the requests ``make`` gives, on ``concurrency`` connections to ``port``."""
    return await _over_connections(
        port, make, concurrency, lambda send: kit.paced(label, send, concurrency, rate, seconds)
    )


async def cursors(port: int, board: str, players: int, rng: random.Random, count: int) -> list[str]:
    """End cursors of pages of 100 at ``count`` random ranks of ``board`` (checked: each page
    starts at its rank)."""
    found = []
    async with httpx.AsyncClient() as http:
        for _ in range(count):
            rank = rng.randrange(1, max(2, players - 200))
            body = json.loads(PAGE_FROM % (board, rank))
            page = (await http.post(f"http://127.0.0.1:{port}/graphql", json=body)).json()
            entries = page["data"]["leaderboard"]["entries"]
            if entries["entries"][0]["rank"] != rank or len(entries["entries"]) != 100:
                raise RuntimeError(f"the page from rank {rank} starts at {entries['entries'][0]['rank']}")
            found.append(entries["pageInfo"]["endCursor"])
    return found


@dataclass
class Server:
    name: str
    port: int
    process: asyncio.subprocess.Process

    def rss_mib(self) -> float:
        return kit.rss_mib(self.process.pid)

    def cpu_seconds(self) -> float:
        """CPU seconds of the server and of the processes it forked (several gateway processes)."""
        return kit.cpu_seconds(self.process.pid, *kit.children(self.process.pid))


async def start(name: str, args: Sequence[str], env: Mapping[str, str], port: int, ready_path: str) -> Server:
    """``python args...`` on ``port`` (log: .data/logs/bench-NAME.log), once ``ready_path`` answers 200."""
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"bench-{name}.log"
    process = await spawn(args, env, log)
    await wait_ready(name, f"http://127.0.0.1:{port}", process, lambda: log_tail(log), path=ready_path)
    return Server(name, port, process)


async def stop(server: Server) -> None:
    await terminate(server.process, within=10)
