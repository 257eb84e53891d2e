"""The gateway's reads as the benchmarks send them (``ops/bench/reads`` and ``ops/bench/scale``).

The GraphQL documents of top-10, player, context and pages of 100 (from a rank, after a cursor), the raw HTTP/1.1 requests that carry them
(``post``, and ``get`` for the plain reference and persisted queries), the kit's closed and paced
loops run over keep-alive connections that fail on any answer but a 200 without errors, and a
server process (the gateway, the plain Starlette reference) started until it answers and stopped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from ops.bench import kit
from ops.stack import ROOT, log_tail, spawn, terminate, wait_ready

TOP = '{"query":"query($b: ID!) { leaderboard(id: $b) { top(k: 10) { entries { rank userId score } asOf { positions { partition offset } newestAcceptedAt } } } }","variables":{"b":"%s"}}'
PLAYER = '{"query":"query($b: ID!, $u: ID!) { leaderboard(id: $b) { player(userId: $u) { rank userId score asOf { positions { partition offset } } } } }","variables":{"b":"%s","u":"%s"}}'
CONTEXT = '{"query":"query($b: ID!, $u: ID!) { leaderboard(id: $b) { context(userId: $u, range: 4) { above { rank userId score } player { rank userId score } below { rank userId score } asOf { positions { partition offset } } } } }","variables":{"b":"%s","u":"%s"}}'
PAGE_FROM = '{"query":"query($b: ID!, $r: Int) { leaderboard(id: $b) { entries(first: 100, fromRank: $r) { entries { rank userId score } pageInfo { endCursor hasNextPage } asOf { positions { partition offset } } } } }","variables":{"b":"%s","r":%d}}'
PAGE_AFTER = '{"query":"query($b: ID!, $c: String) { leaderboard(id: $b) { entries(first: 100, after: $c) { entries { rank userId score } pageInfo { endCursor hasNextPage } asOf { positions { partition offset } } } } }","variables":{"b":"%s","c":"%s"}}'

LOGS = ROOT / ".data" / "logs"


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
