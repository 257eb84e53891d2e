"""Open-loop load of signed award requests through the intake, in this process or in several
generator processes: the award load of ``ops/bench/pipeline``, ``windows`` and ``regions``.

Every request has a scheduled time (``rate`` requests a second, evenly spaced) and is sent at that
time whether or not earlier ones were answered, on an idle keep-alive connection or on a new one
(up to ``max_connections``): a slow intake makes answers late, it never slows the offer. A request
sent more than ``LATE_S`` after its time is counted as late; late requests mean the generator
itself could not keep up (its CPU, or the connection cap), so the offered rate was not offered.
Latency counts from the scheduled time. ``Results`` adds up the answers; ``add_options`` are the
options a schedule is made of (``Schedule.of``).

Run as a script, it is one generator process of ``pipeline.py --generators N``: it waits for the
common start time, sends its share of the schedule and writes what it saw, with its own CPU time,
as msgpack to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import random
import resource
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import uvloop

from ops.bench.kit import Connection, distribution
from ops.stack import with_free_ports
from regions.core.boards import Board
from regions.core.signing import sign
from regions.runtime.settings import Settings, load_settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.session import apply_migrations, connect
from regions.stores.kafka.topics import ensure_topics

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
    query: str = ""  # the request's query, e.g. "wait=applied&timeoutMs=2000"

    @classmethod
    def of(cls, args: argparse.Namespace, port: int, board: str, duration: float, **changes: Any) -> Schedule:
        """The schedule ``add_options`` describe, of ``duration`` seconds, to the intake on ``port``;
        ``changes`` replace other fields (a region's share of the rate, say)."""
        schedule = cls(port, board, args.rate, args.batch, duration, args.players, args.connections)
        return dataclasses.replace(schedule, **changes)


def add_options(
    p: argparse.ArgumentParser,
    *,
    rate: int,
    rate_help: str,
    connections: int,
    connections_help: str,
    players: int = 100_000,
    players_help: str = "distinct players",
    duration: bool = True,
    rates: bool = False,
) -> None:
    """The options a ``Schedule`` is made of: --rate, --batch, --connections, --players, unless
    the script times its phases itself --duration (60 s), and with ``rates`` --rates (several
    rates measured in turn, instead of --rate)."""
    if duration:
        p.add_argument("--duration", type=float, default=60, help="seconds of load (default 60)")
    p.add_argument("--rate", type=int, default=rate, help=f"{rate_help} (default %(default)s)")
    if rates:
        p.add_argument("--rates", type=rate_list, default=None,
                       help="several rates, measured in turn on the same processes (--duration each), "
                            "e.g. 1000,2000,3000 (instead of --rate)")  # fmt: skip
    p.add_argument("--batch", type=int, default=10, help="awards per request (default 10)")
    p.add_argument(
        "--connections", type=int, default=connections, help=f"{connections_help} (default %(default)s)"
    )
    p.add_argument("--players", type=int, default=players, help=f"{players_help} (default %(default)s)")


def rate_list(text: str) -> list[int]:
    """``1000,2000``: rates a second, each above 0."""
    try:
        rates = [int(r) for r in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give awards per second separated by commas, e.g. 1000,2000"
        ) from None
    if not rates or min(rates) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: every rate must be above 0")
    return rates


def bench_settings(prefix: str) -> Settings:
    """This environment's settings with topics and Redis keys of the run's own (``prefix``), free
    ports, and no award rate limit (the load signs every award with one key)."""
    base = load_settings()
    return with_free_ports(base.model_copy(update={
        "kafka": base.kafka.model_copy(update={"topic_prefix": prefix}),
        "redis": base.redis.model_copy(update={"key_prefix": prefix}),
        "intake": base.intake.model_copy(update={"rate_per_key": 1e9, "burst_per_key": 1e9}),
    }))  # fmt: skip


async def bench_board(settings: Settings, tag: str) -> Board:
    """A new all-time board ``bench-<tag>`` in the catalog, with the run's topics and the keyspace's
    tables in place (both re-runnable: the keyspace may be new)."""
    await ensure_topics(settings.kafka)
    await asyncio.to_thread(apply_migrations, settings.cassandra)
    cluster, session = connect(settings.cassandra)
    board = Board(f"bench-{tag}", "Benchmark", settings.region)
    await CassandraCatalog(session).create(board)
    cluster.shutdown()
    return board


class Reply(msgspec.Struct, array_like=True):
    """One request: scheduled and sent (perf_counter seconds), answered, status, awards accepted,
    the last accepted award's (region, partition, offset), and the awards answered with their
    ``applied`` (``?wait=applied``: the projection covered them in time)."""

    scheduled: float
    sent: float
    done: float
    status: int
    accepted: int = 0
    region: str = ""
    partition: int = -1
    offset: int = -1
    applied: int = 0


class GeneratorReport(msgspec.Struct):
    replies: list[Reply]
    cpu_s: float  # this generator's CPU time (user + system) while it ran the schedule
    offered: Offered


class Offered(msgspec.Struct):
    """How the schedule went: the most connections open at once, and the requests that had to wait
    for one (all were busy at the cap: the intake answered too slowly to offer the rate)."""

    connections: int = 0
    waited_for_connection: int = 0


class _Requests:
    """Signed bodies of random awards for one board."""

    def __init__(
        self, board: str, batch: int, players: int, seed: int, occurred_at: bool, query: str = ""
    ) -> None:
        self._board, self._batch, self._occurred_at = board, batch, occurred_at
        self._path = "/internal/awards" + (f"?{query}" if query else "")
        self._players = [f"p{i}" for i in range(players)]
        self._rng = random.Random(seed)

    def next(self) -> bytes:
        """The next request, head and body."""
        rng = self._rng
        awards = [{"leaderboardId": self._board, "matchId": uuid.uuid4().hex, "userId": rng.choice(self._players),
                   "awardType": "points", "delta": rng.randint(1, 100)} for _ in range(self._batch)]  # fmt: skip
        if self._occurred_at:
            now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            for award in awards:
                award["occurredAt"] = now
        body = msgspec.json.encode(awards[0] if self._batch == 1 else {"awards": awards})
        ts = int(time.time())
        head = (f"POST {self._path} HTTP/1.1\r\nhost: bench\r\ncontent-length: {len(body)}\r\n"
                f"content-type: application/json\r\nx-award-key-id: dev\r\nx-award-timestamp: {ts}\r\n"
                f"x-award-signature: {sign('dev-secret', ts, body)}\r\n\r\n")  # fmt: skip
        return head.encode() + body


_accepted = msgspec.json.Decoder(dict[str, list[dict[str, object]]])


def _reply(scheduled: float, sent: float, status: int, body: bytes) -> Reply:
    done = time.perf_counter()
    if status != 202:
        return Reply(scheduled, sent, done, status)
    accepted = _accepted.decode(body)["accepted"]
    last = accepted[-1]
    applied = sum(a.get("applied") is not None for a in accepted)
    return Reply(scheduled, sent, done, status, len(accepted), str(last["region"]),
                 int(str(last["partition"])), int(str(last["offset"])), applied)  # fmt: skip


async def offer(schedule: Schedule, on_reply: Callable[[Reply], None]) -> Offered:
    """Send this generator's share of the schedule, open loop; ``on_reply`` is told of each answer."""
    s = schedule
    interval = s.batch * s.slots / s.rate
    requests = _Requests(
        s.board, s.batch, s.players, seed=s.slot + 1, occurred_at=s.occurred_at, query=s.query
    )
    idle: list[Connection] = []
    freed = asyncio.Event()
    opened, offered = 0, Offered()
    running: set[asyncio.Task[None]] = set()

    async def send(scheduled: float, http: Connection) -> None:
        nonlocal opened
        request = requests.next()
        sent = time.perf_counter()
        try:
            status, reply = await http.exchange(request)
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
            http, opened = Connection(s.port), opened + 1
            offered.connections = max(offered.connections, opened)
        task = asyncio.create_task(send(due, http))
        running.add(task)
        task.add_done_callback(running.discard)
        n += 1
    await asyncio.gather(*running)
    for http in idle:
        http.close()
    return offered


Pending = tuple[float, tuple[str, int], int]  # an accepted request: answered at, (region, partition), offset


@dataclass
class Results:
    """What the answers to a load said, added up as they arrive (``add``)."""

    ack_ms: list[float] = field(default_factory=list)  # every answer's latency, refusals included
    accepted_ms: list[float] = field(default_factory=list)  # of the requests answered 202
    refused_ms: list[float] = field(default_factory=list)  # of the requests answered otherwise
    accepted: int = 0
    applied: int = 0  # accepted awards answered with their ``applied`` (``?wait=applied``)
    rejected: dict[int, int] = field(default_factory=dict)
    pending: list[Pending] = field(default_factory=list)  # not yet seen visible (``freshness``)
    fresh_ms: list[float] = field(default_factory=list)
    late_sends: int = 0
    offered: int = 0  # awards in the requests sent
    send_delay_ms: list[float] = field(default_factory=list)  # sent - scheduled
    connections: int = 0  # most connections open at once, all generators together
    waited_for_connection: int = 0  # requests that waited for a connection: every one was busy at the cap
    generator_cpu_s: float = 0.0  # CPU of generator processes (in-process load: counted with the bench)

    def add(self, reply: Reply, batch: int) -> None:
        self.offered += batch
        latency = (reply.done - reply.scheduled) * 1000
        self.ack_ms.append(latency)
        (self.accepted_ms if reply.status == 202 else self.refused_ms).append(latency)
        self.send_delay_ms.append((reply.sent - reply.scheduled) * 1000)
        if reply.sent - reply.scheduled > LATE_S:
            self.late_sends += 1
        if reply.status == 202:
            self.accepted += reply.accepted
            self.applied += reply.applied
            self.pending.append((reply.done, (reply.region, reply.partition), reply.offset))
        else:
            self.rejected[reply.status] = self.rejected.get(reply.status, 0) + 1

    def figures(self, seconds: float) -> dict[str, object]:
        """As a run records them, over ``seconds`` of load: awards offered and accepted (and accepted
        a second), refused requests by status, late requests, the ack latency's ``distribution`` (ms)."""
        return {"offered": self.offered, "accepted": self.accepted, "accepted_per_s": self.accepted / seconds,
                "applied": self.applied, "rejected": self.rejected, "late_requests": self.late_sends,
                "waited_for_connection": self.waited_for_connection, "connections": self.connections,
                "send_delay_ms": distribution(self.send_delay_ms), "ack_ms": distribution(self.ack_ms),
                "accepted_ms": distribution(self.accepted_ms), "refused_ms": distribution(self.refused_ms)}  # fmt: skip


async def drive(schedule: Schedule, results: Results) -> None:
    """The whole schedule from this process (``offer``), each answer added to ``results``."""
    offered = await offer(schedule, lambda reply: results.add(reply, schedule.batch))
    results.connections, results.waited_for_connection = offered.connections, offered.waited_for_connection


def generator_processes(schedule: Schedule, count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` generator processes (this script), each sending every count-th request of ``schedule``."""
    shares = [msgspec.json.encode(dataclasses.replace(schedule, slot=i, slots=count)) for i in range(count)]
    return [
        subprocess.Popen([sys.executable, str(Path(__file__)), share.decode()], stdout=subprocess.PIPE)
        for share in shares
    ]


async def collect(generators: list[subprocess.Popen[bytes]], batch: int, results: Results) -> None:
    """Wait for the generator processes and add what each saw to ``results``."""
    for generator in generators:
        out, _ = await asyncio.to_thread(generator.communicate)
        if generator.returncode != 0:
            raise RuntimeError(f"a load generator exited with {generator.returncode}; see its output above")
        report = msgspec.msgpack.decode(out, type=GeneratorReport)
        for reply in report.replies:
            results.add(reply, batch)
        results.generator_cpu_s += report.cpu_s
        results.connections += report.offered.connections
        results.waited_for_connection += report.offered.waited_for_connection


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
