"""Open-loop load of signed award requests, in this process or in several generator processes.

Every request has a scheduled time (``rate`` requests a second, evenly spaced) and is sent at that
time whether or not earlier ones were answered, on an idle keep-alive connection or on a new one
(up to ``max_connections``): a slow intake makes answers late, it never slows the offer. A request
sent more than ``LATE_S`` after its time is counted as late; late requests mean the generator
itself could not keep up (its CPU, or the connection cap), so the offered rate was not offered.
Latency counts from the scheduled time.

Run as a script, it is one generator process of ``pipeline.py --generators N``: it waits for the
common start time, sends its share of the schedule and writes what it saw, with its own CPU time,
as msgpack to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import msgspec
import uvloop

from regions.core.signing import sign

LATE_S = 0.005  # a request sent later than this after its scheduled time was not offered on time


@dataclass(frozen=True, slots=True)
class Schedule:
    """Requests ``slot``, ``slot + slots``, ... of one schedule shared by ``slots`` generators."""

    port: int
    board: str
    rate: float  # awards a second, all generators together
    batch: int
    duration: float
    players: int
    max_connections: int  # per generator
    slot: int = 0
    slots: int = 1
    start_at: float = 0.0  # time.time() of the first request; 0: at once
    occurred_at: bool = False  # stamp each award's occurredAt (the send time), as boards with windows need


class Reply(msgspec.Struct, array_like=True):
    """One request: scheduled and sent (perf_counter seconds), answered, status, awards accepted,
    and the last accepted award's (region, partition, offset)."""

    scheduled: float
    sent: float
    done: float
    status: int
    accepted: int = 0
    region: str = ""
    partition: int = -1
    offset: int = -1


class GeneratorReport(msgspec.Struct):
    replies: list[Reply]
    cpu_s: float  # this generator's CPU time (user + system) while it ran the schedule
    offered: Offered


class Offered(msgspec.Struct):
    """How the schedule went: the most connections open at once, and the requests that had to wait
    for one (all were busy at the cap: the intake answered too slowly to offer the rate)."""

    connections: int = 0
    waited_for_connection: int = 0


class RawHttp:
    """A keep-alive HTTP/1.1 connection on asyncio streams: the load generator must cost little CPU."""

    def __init__(self, port: int) -> None:
        self._port = port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self._port)
        assert self._reader is not None
        head = f"POST {path} HTTP/1.1\r\nhost: bench\r\ncontent-length: {len(body)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        self._writer.write(head.encode() + body)
        status_line = await self._reader.readline()
        if not status_line:
            raise ConnectionResetError("the intake closed the connection")
        length = 0
        while (line := await self._reader.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return int(status_line.split()[1]), await self._reader.readexactly(length)

    def closed(self) -> bool:
        """The server closed it (uvicorn closes idle keep-alive connections after a few seconds)."""
        return self._reader is not None and self._reader.at_eof()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


class _Requests:
    """Signed bodies of random awards for one board."""

    def __init__(self, board: str, batch: int, players: int, seed: int, occurred_at: bool) -> None:
        self._board, self._batch, self._occurred_at = board, batch, occurred_at
        self._players = [f"p{i}" for i in range(players)]
        self._rng = random.Random(seed)

    def next(self) -> tuple[bytes, dict[str, str]]:
        rng = self._rng
        awards = [{"leaderboardId": self._board, "matchId": uuid.uuid4().hex, "userId": rng.choice(self._players),
                   "awardType": "points", "delta": rng.randint(1, 100)} for _ in range(self._batch)]  # fmt: skip
        if self._occurred_at:
            now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            for award in awards:
                award["occurredAt"] = now
        body = msgspec.json.encode(awards[0] if self._batch == 1 else {"awards": awards})
        ts = int(time.time())
        headers = {"content-type": "application/json", "x-award-key-id": "dev", "x-award-timestamp": str(ts),
                   "x-award-signature": sign("dev-secret", ts, body)}  # fmt: skip
        return body, headers


_accepted = msgspec.json.Decoder(dict[str, list[dict[str, object]]])


def _reply(scheduled: float, sent: float, status: int, body: bytes) -> Reply:
    done = time.perf_counter()
    if status != 202:
        return Reply(scheduled, sent, done, status)
    accepted = _accepted.decode(body)["accepted"]
    last = accepted[-1]
    return Reply(scheduled, sent, done, status, len(accepted), str(last["region"]),
                 int(str(last["partition"])), int(str(last["offset"])))  # fmt: skip


async def offer(schedule: Schedule, on_reply: Callable[[Reply], None]) -> Offered:
    """Send this generator's share of the schedule, open loop; ``on_reply`` is told of each answer."""
    s = schedule
    interval = s.batch * s.slots / s.rate
    requests = _Requests(s.board, s.batch, s.players, seed=s.slot + 1, occurred_at=s.occurred_at)
    idle: list[RawHttp] = []
    freed = asyncio.Event()
    opened, offered = 0, Offered()
    running: set[asyncio.Task[None]] = set()

    async def send(scheduled: float, http: RawHttp) -> None:
        nonlocal opened
        body, headers = requests.next()
        sent = time.perf_counter()
        try:
            status, reply = await http.post("/internal/awards", body, headers)
        except (OSError, asyncio.IncompleteReadError, ValueError):
            status, reply = 0, b""  # counted as refused; the connection is dropped
            http.close()
            opened -= 1
        else:
            idle.append(http)
        on_reply(_reply(scheduled, sent, status, reply))
        freed.set()

    if s.start_at:
        await asyncio.sleep(max(0.0, s.start_at - time.time()))
    start = time.perf_counter() + s.slot * interval / s.slots
    n = 0
    while (due := start + n * interval) < start + s.duration:
        if (wait := due - time.perf_counter()) > 0:
            await asyncio.sleep(wait)
        while idle and idle[-1].closed():
            idle.pop().close()
            opened -= 1
        if not idle and opened >= s.max_connections:
            offered.waited_for_connection += 1
        while not idle and opened >= s.max_connections:
            freed.clear()
            await freed.wait()
        if idle:
            http = idle.pop()
        else:
            http, opened = RawHttp(s.port), opened + 1
            offered.connections = max(offered.connections, opened)
        task = asyncio.create_task(send(due, http))
        running.add(task)
        task.add_done_callback(running.discard)
        n += 1
    await asyncio.gather(*running)
    for http in idle:
        http.close()
    return offered


async def _generate(schedule: Schedule) -> GeneratorReport:
    replies: list[Reply] = []
    before = resource.getrusage(resource.RUSAGE_SELF)
    offered = await offer(schedule, replies.append)
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return GeneratorReport(replies, cpu, offered)


def main() -> None:
    p = argparse.ArgumentParser(description="one generator process of the pipeline benchmark")
    p.add_argument("schedule", help="the Schedule as JSON")
    schedule = msgspec.json.decode(sys.argv[1] if len(sys.argv) > 1 else "", type=Schedule)
    p.parse_args()
    report = uvloop.run(_generate(schedule))
    out = memoryview(msgspec.msgpack.encode(report))
    os.set_blocking(sys.stdout.fileno(), True)  # the event loop leaves it non-blocking
    while out:
        out = out[os.write(sys.stdout.fileno(), out) :]


if __name__ == "__main__":
    main()
