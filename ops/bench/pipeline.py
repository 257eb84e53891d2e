"""Pipeline benchmark: signed awards through the HTTP intake for a bounded time, then a replay.

Prints accepted awards/s, acknowledgement latency, freshness (acknowledged -> visible in Redis, by
the projection's asOf positions), CPU and memory of every process, and the projector's replay rate
next to redis-benchmark running the same Lua script pipelined on the same Redis.

Run through ``ops/bench/pipeline`` (it starts the servers). Options: ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import re
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import msgspec

from regions.cassandra_catalog import CassandraCatalog
from regions.cassandra_store import connect
from regions.core.boards import Board
from regions.core.signing import sign
from regions.kafka_clients import ensure_topics
from regions.projector.rebuild import rebuild
from regions.redis_projection import RedisProjection, connect_redis
from regions.settings import AuditSettings, Settings, load_settings
from schema.resources import lua_script
from tests.harness import SERVICES, region_env, with_free_ports

ROOT = Path(__file__).resolve().parents[2]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@dataclass
class Results:
    ack_ms: list[float] = field(default_factory=list)
    accepted: int = 0
    rejected: dict[int, int] = field(default_factory=dict)
    pending: list[tuple[float, tuple[str, int], int]] = field(
        default_factory=list
    )  # ack time, (region, partition), offset
    fresh_ms: list[float] = field(default_factory=list)
    late_sends: int = 0


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
        length = 0
        while (line := await self._reader.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return int(status_line.split()[1]), await self._reader.readexactly(length)


async def drive(port: int, board: str, args: argparse.Namespace, results: Results) -> None:
    """Open-loop load: one request of ``batch`` awards every 1/(rate/batch) s over ``connections``."""
    interval = args.batch / args.rate
    queue: asyncio.Queue[float | None] = asyncio.Queue(maxsize=args.connections * 4)
    players = [f"p{i}" for i in range(args.players)]
    rng = random.Random(1)

    async def worker() -> None:
        http = RawHttp(port)
        while (scheduled := await queue.get()) is not None:
            awards = [{"leaderboardId": board, "matchId": uuid.uuid4().hex, "userId": rng.choice(players),
                       "awardType": "points", "delta": rng.randint(1, 100)} for _ in range(args.batch)]  # fmt: skip
            body = msgspec.json.encode({"awards": awards})
            ts = int(time.time())
            headers = {"content-type": "application/json", "x-award-key-id": "dev", "x-award-timestamp": str(ts),
                       "x-award-signature": sign("dev-secret", ts, body)}  # fmt: skip
            try:
                status, reply = await http.post("/internal/awards", body, headers)
            except (OSError, asyncio.IncompleteReadError, ValueError):
                status, reply, http = 0, b"", RawHttp(port)  # counted as refused; a new connection next
            done = time.perf_counter()
            results.ack_ms.append((done - scheduled) * 1000)
            if status == 202:
                accepted = msgspec.json.decode(reply)["accepted"]
                results.accepted += len(accepted)
                last = accepted[-1]
                results.pending.append((done, (last["region"], last["partition"]), last["offset"]))
            else:
                results.rejected[status] = results.rejected.get(status, 0) + 1

    workers = [asyncio.create_task(worker()) for _ in range(args.connections)]
    start = time.perf_counter()
    n = 0
    while (now := time.perf_counter()) - start < args.duration:
        due = start + n * interval
        if due > now:
            await asyncio.sleep(due - now)
        if queue.full():
            results.late_sends += 1
        await queue.put(due)  # latency counts from the scheduled time: queueing delay is included
        n += 1
    for _ in workers:
        await queue.put(None)
    await asyncio.gather(*workers)


async def watch_freshness(projection: RedisProjection, results: Results, stop: asyncio.Event) -> None:
    """Polls asOf every 5 ms; an award is visible once its partition's position reaches it."""
    while not (stop.is_set() and not results.pending):
        positions = (await projection.positions()).offsets
        results.pending = still_waiting(results.pending, positions, time.perf_counter(), results.fresh_ms)
        await asyncio.sleep(0.005)


def still_waiting(
    pending: list[tuple[float, tuple[str, int], int]],
    positions: Mapping[tuple[str, int], int],
    now: float,
    visible_ms: list[float],
) -> list[tuple[float, tuple[str, int], int]]:
    """The acknowledged batches ``positions`` do not reach yet; those they reach add their time from
    acknowledgement to ``now`` to ``visible_ms``."""
    waiting = []
    for acked, source, offset in pending:
        if positions.get(source, -1) >= offset:
            visible_ms.append((now - acked) * 1000)
        else:
            waiting.append((acked, source, offset))
    return waiting


def redis_benchmark(settings: Settings, requests: int) -> float:
    """redis-benchmark calling the projection's Lua script (one total per call), pipelined."""
    url = re.match(r"redis://([^:/]+):(\d+)", settings.redis.url)
    host, port = (url.group(1), url.group(2)) if url else ("127.0.0.1", "6379")
    sha = subprocess.run(["redis-cli", "-h", host, "-p", port, "SCRIPT", "LOAD", lua_script("apply_totals")],
                         capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    tag = f"{{bench:{uuid.uuid4().hex[:6]}}}"
    out = subprocess.run(
        ["redis-benchmark", "-h", host, "-p", port, "-n", str(requests), "-P", "64", "-c", "4", "-r", "1000000", "-q",
         "EVALSHA", sha, "3", f"{tag}:rank", f"{tag}:rec", f"{tag}:seq",
         "u:__rand_int__", "1", "__rand_int__", "-__rand_int__", "u:__rand_int__"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    match = re.search(r"([\d.]+) requests per second", out)
    subprocess.run(["redis-cli", "-h", host, "-p", port, "DEL", f"{tag}:rank", f"{tag}:rec", f"{tag}:seq"],
                   capture_output=True, check=False)  # fmt: skip
    return float(match.group(1)) if match else float("nan")


def start_service(service: str, env: dict[str, str], logs: Path) -> subprocess.Popen[bytes]:
    with (logs / f"{service}.log").open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", f"regions.{service}"], env=env, stdout=log, stderr=subprocess.STDOUT
        )


async def audit_backlog(settings: Settings) -> int:
    async with httpx.AsyncClient() as http:
        lag = (await http.get(f"http://127.0.0.1:{settings.audit.health_port}/healthz")).json()["lag"]
    return sum(sum(partitions.values()) for partitions in lag.values())


async def until_ready(settings: Settings, procs: dict[str, subprocess.Popen[bytes]], within: float) -> None:
    """Every started process answers /readyz (a loaded machine starts them slowly)."""
    ports = {"intake": settings.intake.port, "processor": settings.processor.health_port,
             "projector": settings.projector.health_port, "audit": settings.audit.health_port}  # fmt: skip
    deadline = time.monotonic() + within
    async with httpx.AsyncClient() as http:
        for name in procs:
            while True:
                if procs[name].poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{name} did not become ready; see its log")
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(f"http://127.0.0.1:{ports[name]}/readyz")).status_code == 200:
                        break
                await asyncio.sleep(0.2)


def stop_all(procs: dict[str, subprocess.Popen[bytes]]) -> None:
    for p in procs.values():
        p.terminate()
    for p in procs.values():
        p.wait(20)


def with_children(pids: dict[str, int]) -> dict[str, int]:
    """The processes and, for one that forked several (intake workers), each child by name."""
    found = {}
    for name, pid in pids.items():
        children = (
            Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            if Path(f"/proc/{pid}").exists()
            else []
        )
        if children:
            found.update({f"{name} [{n}]": int(child) for n, child in enumerate(children)})
        found[name] = pid
    return found


def profile(pids: dict[str, int], seconds: float, out: Path) -> list[subprocess.Popen[bytes]]:
    """py-spy sampling every Python process of the region for ``seconds``, one flame file each."""
    out.mkdir(parents=True, exist_ok=True)
    spy = Path(sys.executable).parent / "py-spy"
    return [
        subprocess.Popen(
            [
                str(spy),
                "record",
                "--nonblocking",
                "--duration",
                str(int(seconds)),
                "--rate",
                "50",
                "--format",
                "raw",
                "--output",
                str(out / f"{name.replace(' ', '_')}.txt"),
                "--pid",
                str(pid),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name, pid in pids.items()
    ]


def server_pids() -> dict[str, int]:
    run = Path(os.environ.get("LB_OPS_DATA_DIR", ROOT / ".data")) / "run"
    return {p.stem: int(p.read_text()) for p in run.glob("*.pid")}


def bench_settings(prefix: str) -> Settings:
    """This environment's settings with topics and Redis keys of the run's own (``prefix``), free
    ports, and no award rate limit."""
    base = load_settings()
    return with_free_ports(base.model_copy(update={
        "kafka": base.kafka.model_copy(update={"topic_prefix": prefix}),
        "redis": base.redis.model_copy(update={"key_prefix": prefix}),
        "intake": base.intake.model_copy(update={"rate_per_key": 1e9, "burst_per_key": 1e9}),
    }))  # fmt: skip


async def main(args: argparse.Namespace) -> None:
    tag = uuid.uuid4().hex[:8]
    settings = bench_settings(f"bench{tag}")
    print(
        f"== setup: topics {settings.kafka.topic_prefix}.*, {args.duration:.0f}s at {args.rate}/s in batches of {args.batch}"
        f", audit cap {args.audit_rate or 'none'}, audit niceness {args.audit_niceness}"
    )
    await ensure_topics(settings.kafka)
    cluster, session = connect(settings.cassandra)
    board = Board(f"bench-{tag}", "Benchmark", settings.region)
    await CassandraCatalog(session).create(board)
    cluster.shutdown()

    logs = ROOT / ".data" / "logs" / f"bench-{tag}"
    logs.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        **region_env(settings),
        "LB_AUDIT__MAX_ROWS_PER_S": str(args.audit_rate),
        "LB_AUDIT__NICENESS": str(args.audit_niceness),
        "LB_INTAKE__WORKERS": str(args.intake_workers),
        **({"LB_KAFKA__LINGER_MS": str(args.linger_ms)} if args.linger_ms is not None else {}),
    }
    procs = {s: start_service(s, env, logs) for s in SERVICES if not (args.no_audit and s == "audit")}
    redis = connect_redis(settings.redis)
    projection = RedisProjection(redis, settings.redis.key_prefix)
    try:
        await until_ready(settings, procs, args.warmup * 10)
        await asyncio.sleep(args.warmup)
        services = with_children({s: p.pid for s, p in procs.items()})
        pids = {**services, **server_pids(), "bench (load generator)": os.getpid()}
        spies = [] if args.profile is None else profile(
            {n: p for n, p in services.items() if n != "intake" or args.intake_workers == 1},
            args.duration, Path(args.profile),
        )  # fmt: skip
        idle_start, idle_cpu = time.perf_counter(), {n: cpu_seconds(p) for n, p in pids.items()}
        await asyncio.sleep(args.idle)  # no load: what every process costs anyway (polls, heartbeats, others)
        idle_wall = time.perf_counter() - idle_start
        idle = {n: (cpu_seconds(p) - idle_cpu[n]) / idle_wall * 100 for n, p in pids.items()}
        cpu_before, wall_before = {n: cpu_seconds(p) for n, p in pids.items()}, time.perf_counter()
        results, stop = Results(), asyncio.Event()
        watcher = asyncio.create_task(watch_freshness(projection, results, stop))
        print("== load running ...", flush=True)
        await drive(settings.intake.port, board.id, args, results)
        wall = time.perf_counter() - wall_before
        cpu = {n: (cpu_seconds(p) - cpu_before[n]) / wall * 100 for n, p in pids.items()}
        rss = {n: rss_mib(p) for n, p in pids.items()}
        stop.set()
        await asyncio.wait_for(watcher, 60)
        for spy in spies:
            spy.wait(60)
        report(args, results, wall, cpu, idle, rss)
        if "audit" in procs:
            print(
                f"audit backlog at the end of the load: {await audit_backlog(settings):,} rows (drains after the peak)"
            )
        stop_all(procs)  # the replay is measured on an otherwise idle machine, like redis-benchmark
        if not args.no_replay:
            await replay_vs_redis_benchmark(settings, projection)
    finally:
        stop_all(procs)
        await redis.aclose()


def report(
    args: argparse.Namespace,
    r: Results,
    wall: float,
    cpu: dict[str, float],
    idle: dict[str, float],
    rss: dict[str, float],
) -> None:
    ms = lambda xs, q: f"{percentile(xs, q):8.1f}"  # noqa: E731
    print(f"\n== intake ({wall:.1f} s, {args.connections} connections, {args.batch} awards per request)")
    print(
        f"accepted awards/s      {r.accepted / wall:10.0f}   (target rate {args.rate}/s; {r.accepted} accepted)"
    )
    print(f"rejected requests      {sum(r.rejected.values()):10d}   {r.rejected or ''}")
    print(f"late send slots        {r.late_sends:10d}   (generator could not keep the schedule)")
    print(
        f"ack latency ms         p50 {ms(r.ack_ms, 0.5)}  p95 {ms(r.ack_ms, 0.95)}  p99 {ms(r.ack_ms, 0.99)}"
    )
    print(f"freshness ms           p50 {ms(r.fresh_ms, .5)}  p95 {ms(r.fresh_ms, .95)}  p99 {ms(r.fresh_ms, .99)}"
          f"   ({len(r.fresh_ms)} samples, {len(r.pending)} never visible)")  # fmt: skip

    def per_award(name: str) -> float:
        """CPU ms per accepted award above the process's CPU without load (shared servers also
        serve whatever else runs on the machine: only what the load added is counted)."""
        return max(0.0, cpu[name] - idle[name]) / 100 * wall * 1000 / max(1, r.accepted)

    print(f"\n== processes (idle: the {args.idle:.0f} s before the load)")
    print(f"{'':22} {'CPU %':>7} {'idle %':>7} {'RSS MiB':>8}   CPU ms per accepted award, above idle")
    for name in cpu:
        print(f"{name:22} {cpu[name]:7.1f} {idle[name]:7.1f} {rss[name]:8.0f}   {per_award(name):8.3f}")
    print(
        f"{'all':22} {sum(cpu.values()):7.1f} {sum(idle.values()):7.1f} {'':8}   {sum(map(per_award, cpu)):8.3f}"
    )


async def replay_vs_redis_benchmark(settings: Settings, projection: RedisProjection) -> None:
    print("\n== replay: rebuild of the projection from the totals topic, then redis-benchmark", flush=True)
    started = time.perf_counter()
    report_ = await rebuild(settings, projection)
    replay_s = time.perf_counter() - started
    totals = report_.records
    replay_rate = totals / replay_s
    reference = statistics.median(redis_benchmark(settings, 200_000) for _ in range(3))
    print(
        f"projector replay       {replay_rate:10.0f} totals/s  ({totals} offsets in {replay_s:.1f} s, Kafka read included)"
    )
    print(
        f"redis-benchmark        {reference:10.0f} calls/s   (same script, one total per call, -P 64, median of 3)"
    )
    print(f"ratio                  {replay_rate / reference:10.2f}x  (target >= 0.4x)")


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=60, help="seconds of load (default 60)")
    p.add_argument("--rate", type=int, default=3000, help="awards per second offered (default 3000)")
    p.add_argument("--batch", type=int, default=10, help="awards per request (default 10)")
    p.add_argument("--connections", type=int, default=32, help="concurrent HTTP connections (default 32)")
    p.add_argument("--players", type=int, default=100_000, help="distinct players (default 100000)")
    p.add_argument("--no-audit", action="store_true", help="leave the audit sink off (isolates its CPU cost)")
    p.add_argument(
        "--audit-rate", type=float, default=0, help="LB_AUDIT__MAX_ROWS_PER_S for the run (0: no cap)"
    )
    p.add_argument(
        "--audit-niceness",
        type=int,
        default=AuditSettings().niceness,
        help="LB_AUDIT__NICENESS for the run (default %(default)s; 0: same CPU priority as the rest)",
    )
    p.add_argument("--intake-workers", type=int, default=1, help="intake processes on one port (default 1)")
    p.add_argument("--linger-ms", type=int, help="LB_KAFKA__LINGER_MS for the run (default: the setting's)")
    p.add_argument("--profile", help="directory for a py-spy profile of every Python process under the load")
    p.add_argument("--no-replay", action="store_true", help="skip the replay and redis-benchmark part")
    p.add_argument(
        "--idle", type=float, default=5, help="seconds of CPU measured without load first (default 5)"
    )
    p.add_argument(
        "--warmup", type=float, default=8, help="seconds to settle once every process is ready (default 8)"
    )
    return p.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse()))
