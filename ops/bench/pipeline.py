"""Pipeline benchmark: signed awards through the HTTP intake for a bounded time, then a replay.

The load is open loop (``load.py``): every request leaves at its scheduled time, from
``--generators`` processes that report their own CPU, and requests that could not leave on time are
counted. Prints offered and accepted awards/s, acknowledgement latency, freshness (acknowledged ->
visible in Redis, by the projection's asOf positions), CPU and memory of every process and server
with the CPU per accepted award over the load and its drain, and the projector's replay rate next
to redis-benchmark running the same Lua script pipelined on the same Redis.

Run through ``ops/bench/pipeline`` (it starts the servers of ``ops/services env``). Options: ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import dataclasses
import os
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

# The open-loop load generator, next to this script.
from load import LATE_S, GeneratorReport, Reply, Schedule, offer

from regions.core.boards import Board
from regions.projector.rebuild import rebuild
from regions.runtime.settings import AuditSettings, Settings, load_settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.session import apply_migrations, connect
from regions.stores.kafka.clients import ensure_topics
from regions.stores.redis.projection import RedisProjection, connect_redis
from schema.resources import lua_script
from tests.harness import SERVICES, region_env, with_free_ports

ROOT = Path(__file__).resolve().parents[2]
BENCH = "bench (this process)"
GENERATORS = "load generators"


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
    offered: int = 0  # awards in the requests sent
    send_delay_ms: list[float] = field(default_factory=list)  # sent - scheduled
    connections: int = 0  # most connections open at once, all generators together
    waited_for_connection: int = 0  # requests that waited for a connection: every one was busy at the cap
    generator_cpu_s: float = 0.0  # CPU of generator processes (in-process load: counted with the bench)

    def add(self, reply: Reply, batch: int) -> None:
        self.offered += batch
        self.ack_ms.append((reply.done - reply.scheduled) * 1000)
        self.send_delay_ms.append((reply.sent - reply.scheduled) * 1000)
        if reply.sent - reply.scheduled > LATE_S:
            self.late_sends += 1
        if reply.status == 202:
            self.accepted += reply.accepted
            self.pending.append((reply.done, (reply.region, reply.partition), reply.offset))
        else:
            self.rejected[reply.status] = self.rejected.get(reply.status, 0) + 1


async def drive(
    port: int, board: str, args: argparse.Namespace, results: Results, occurred_at: bool = False
) -> None:
    """Open-loop load from this process: one request of ``batch`` awards every 1/(rate/batch) s, on
    at most ``connections`` connections (see ``load.offer``); ``occurred_at``: each award carries
    its send time as occurredAt (a board with a time window requires it)."""
    schedule = Schedule(port, board, args.rate, args.batch, args.duration, args.players, args.connections,
                        occurred_at=occurred_at)  # fmt: skip
    offered = await offer(schedule, lambda reply: results.add(reply, args.batch))
    results.connections, results.waited_for_connection = offered.connections, offered.waited_for_connection


def generator_processes(schedule: Schedule, count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` generator processes (``load.py``), each sending every count-th request of ``schedule``."""
    script = str(Path(__file__).with_name("load.py"))
    shares = [msgspec.json.encode(dataclasses.replace(schedule, slot=i, slots=count)) for i in range(count)]
    return [
        subprocess.Popen([sys.executable, script, share.decode()], stdout=subprocess.PIPE) for share in shares
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


class PositionHistory:
    """Every change of the projection's asOf positions, with the time it was first seen (polled
    every 5 ms), so each acknowledged award's visibility is found afterwards."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, int], tuple[list[float], list[int]]] = {}
        self._needed: dict[tuple[str, int], int] | None = None

    async def watch(
        self,
        projection: RedisProjection,
        stop: asyncio.Event,
        pending: list[tuple[float, tuple[str, int], int]],
    ) -> None:
        """Until ``stop`` is set and the positions reach every award in ``pending`` (read then)."""
        last: Mapping[tuple[str, int], int] = {}
        while not (stop.is_set() and self._reach_all(pending, last)):
            positions = (await projection.positions()).offsets
            now = time.perf_counter()
            for source, offset in positions.items():
                if last.get(source) != offset:
                    times, offsets = self.seen.setdefault(source, ([], []))
                    times.append(now)
                    offsets.append(offset)
            last = positions
            await asyncio.sleep(0.005)

    def _reach_all(
        self, pending: list[tuple[float, tuple[str, int], int]], positions: Mapping[tuple[str, int], int]
    ) -> bool:
        if self._needed is None:  # the load is over: what each source must reach
            self._needed = {}
            for _, source, offset in pending:
                self._needed[source] = max(offset, self._needed.get(source, -1))
        return all(positions.get(source, -1) >= offset for source, offset in self._needed.items())

    def visible_at(self, acked: float, source: tuple[str, int], offset: int) -> float | None:
        """When positions first reached ``offset`` of ``source`` at or after ``acked``."""
        times, offsets = self.seen.get(source, ([], []))
        before = bisect.bisect_right(times, acked) - 1  # the positions in force when it was acknowledged
        if before >= 0 and offsets[before] >= offset:
            return acked
        i = max(bisect.bisect_left(times, acked), bisect.bisect_left(offsets, offset))
        return times[i] if i < len(times) else None


def freshness(history: PositionHistory, results: Results) -> None:
    """Acknowledged -> visible for every accepted request; those never seen stay in ``pending``."""
    waiting = []
    for acked, source, offset in results.pending:
        seen = history.visible_at(acked, source, offset)
        if seen is None:
            waiting.append((acked, source, offset))
        else:
            results.fresh_ms.append((seen - acked) * 1000)
    results.pending = waiting


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


def redis_benchmark(ports: list[int], requests: int) -> float:
    """redis-benchmark calling ``apply_totals`` with one total per call, pipelined: each call a new
    version of a random player, in a version bucket of its own (the script's work per total). On a
    cluster (several ``ports``), against the master that holds the keys' slot (they share a tag)."""
    tag = f"{{bench:{uuid.uuid4().hex[:6]}}}"
    state = f"{tag}:state"
    port = next(p for p in ports if _redis_cli(p, "SET", state, "live").strip() == "OK")  # the slot's master
    sha = _redis_cli(port, "SCRIPT", "LOAD", lua_script("apply_totals")).strip()
    out = subprocess.run(
        ["redis-benchmark", "-p", str(port), "-n", str(requests), "-P", "64", "-c", "4", "-r", "1000000", "-q",
         "EVALSHA", sha, "3", f"{tag}:rank", state, f"{tag}:v:__rand_int__",
         "live", "u:__rand_int__", "__rand_int__", "-__rand_int__", "u:__rand_int__", "3"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    match = re.search(r"([\d.]+) requests per second", out)
    subprocess.run(["sh", "-c", f"redis-cli -p {port} --scan --pattern '{tag}*' | xargs -r redis-cli -p {port} unlink"],
                   capture_output=True, check=False)  # fmt: skip
    return float(match.group(1)) if match else float("nan")


def _redis_cli(port: int, *args: str) -> str:
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True).stdout


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
        f" from {args.generators or 'this'} generator process(es), audit cap {args.audit_rate or 'none'},"
        f" audit niceness {args.audit_niceness}"
    )
    await ensure_topics(settings.kafka)
    await asyncio.to_thread(apply_migrations, settings.cassandra)  # re-runnable: the keyspace may be new
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
        report(args, await measure(args, settings, board, procs, projection))
        stop_all(procs)  # the replay is measured on an otherwise idle machine, like redis-benchmark
        if not args.no_replay:
            await replay_vs_redis_benchmark(settings, projection)
    finally:
        stop_all(procs)
        await redis.aclose()


@dataclass
class Measured:
    results: Results
    wall: float  # seconds of load
    drained: float  # seconds of load and of the drain after it (audit backlog and freshness)
    cpu: dict[str, float]  # CPU % during the load
    idle: dict[str, float]  # CPU % before the load
    used: dict[str, float]  # CPU seconds during the load and the drain
    rss: dict[str, float]

    def per_award(self, name: str) -> float:
        """CPU ms per accepted award, load and drain, above the process's CPU without load (shared
        servers also serve whatever else runs on the machine: only what the load added is counted)."""
        extra = self.used[name] - self.idle[name] / 100 * self.drained
        return max(0.0, extra) * 1000 / max(1, self.results.accepted)


async def measure(
    args: argparse.Namespace,
    settings: Settings,
    board: Board,
    procs: dict[str, subprocess.Popen[bytes]],
    projection: RedisProjection,
) -> Measured:
    """CPU of every process without load, then under the load and until what it left behind is
    done (every acknowledged award visible, the audit backlog written)."""
    services = with_children({s: p.pid for s, p in procs.items()})
    pids = {**services, **server_pids(), BENCH: os.getpid()}
    spies = [] if args.profile is None else profile(
        {n: p for n, p in services.items() if n != "intake" or args.intake_workers == 1},
        args.duration, Path(args.profile),
    )  # fmt: skip
    idle_start, idle_cpu = time.perf_counter(), {n: cpu_seconds(p) for n, p in pids.items()}
    await asyncio.sleep(args.idle)  # no load: what every process costs anyway (polls, heartbeats, others)
    idle_wall = time.perf_counter() - idle_start
    idle = {n: (cpu_seconds(p) - idle_cpu[n]) / idle_wall * 100 for n, p in pids.items()}
    results, history, stop = Results(), PositionHistory(), asyncio.Event()
    schedule = Schedule(settings.intake.port, board.id, args.rate, args.batch, args.duration, args.players,
                        max(1, args.connections // max(1, args.generators)), start_at=time.time() + 1.0)  # fmt: skip
    generators = generator_processes(schedule, args.generators) if args.generators else []
    await asyncio.sleep(max(0.0, schedule.start_at - time.time()))
    cpu_before, wall_before = {n: cpu_seconds(p) for n, p in pids.items()}, time.perf_counter()
    watcher = asyncio.create_task(history.watch(projection, stop, results.pending))
    print("== load running ...", flush=True)
    if generators:
        await collect(generators, args.batch, results)
    else:
        await drive(settings.intake.port, board.id, args, results)
    wall = time.perf_counter() - wall_before
    cpu = {n: (cpu_seconds(p) - cpu_before[n]) / wall * 100 for n, p in pids.items()}
    rss = {n: rss_mib(p) for n, p in pids.items()}
    stop.set()
    print(
        "== load done; draining (every acknowledged award visible, the audit backlog written) ...", flush=True
    )
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(watcher, 60)  # what is not visible by then is reported as never visible
    if "audit" in procs:
        await drain_audit(settings, within=args.drain)
    drained = time.perf_counter() - wall_before
    used = {n: cpu_seconds(p) - cpu_before[n] for n, p in pids.items()}
    if generators:
        cpu[GENERATORS], idle[GENERATORS], rss[GENERATORS] = (
            results.generator_cpu_s / wall * 100,
            0.0,
            float("nan"),
        )
        used[GENERATORS] = results.generator_cpu_s
    freshness(history, results)
    for spy in spies:
        spy.wait(60)
    return Measured(results, wall, drained, cpu, idle, used, rss)


async def drain_audit(settings: Settings, within: float) -> None:
    """Until the audit backlog is 0, at most ``within`` seconds; says so when it is not."""
    deadline = time.perf_counter() + within
    while True:
        left = await audit_backlog(settings)
        if not left or time.perf_counter() > deadline:
            break
        await asyncio.sleep(0.2)
    if left:
        print(
            f"   the audit backlog is still {left:,} rows after {within:.0f} s: its CPU per award is understated"
        )


def report(args: argparse.Namespace, m: Measured) -> None:
    r = m.results
    ms = lambda xs, q: f"{percentile(xs, q):8.1f}"  # noqa: E731
    print(
        f"\n== intake ({m.wall:.1f} s, {args.batch} awards per request, open loop: at most {args.connections} connections)"
    )
    print(f"offered awards/s       {r.offered / args.duration:10.0f}   (target rate {args.rate}/s)")
    print(f"accepted awards/s      {r.accepted / m.wall:10.0f}   ({r.accepted} accepted)")
    print(f"rejected requests      {sum(r.rejected.values()):10d}   {r.rejected or ''}")
    print(f"late requests          {r.late_sends:10d}   (sent over {LATE_S * 1000:.0f} ms after their time, so the rate "
          f"was not offered; send delay p99 {ms(r.send_delay_ms, .99).strip()} ms)")  # fmt: skip
    print(f"  waited for a connection{r.waited_for_connection:9d}   (all {args.connections} were busy: the intake "
          f"answered too slowly; the rest of the late ones: the generators' own CPU; {r.connections} open at most)")  # fmt: skip
    print(
        f"ack latency ms         p50 {ms(r.ack_ms, 0.5)}  p95 {ms(r.ack_ms, 0.95)}  p99 {ms(r.ack_ms, 0.99)}"
    )
    print(f"freshness ms           p50 {ms(r.fresh_ms, .5)}  p95 {ms(r.fresh_ms, .95)}  p99 {ms(r.fresh_ms, .99)}"
          f"   ({len(r.fresh_ms)} samples, {len(r.pending)} never visible)")  # fmt: skip
    print(
        f"\n== processes (idle: the {args.idle:.0f} s before the load; drained {m.drained - m.wall:.1f} s after it)"
    )
    print(
        f"{'':24} {'CPU %':>7} {'idle %':>7} {'RSS MiB':>8}   CPU ms per accepted award (load and drain, above idle)"
    )
    for name in m.cpu:
        print(
            f"{name:24} {m.cpu[name]:7.1f} {m.idle[name]:7.1f} {m.rss[name]:8.0f}   {m.per_award(name):8.3f}"
        )
    print(
        f"{'all':24} {sum(m.cpu.values()):7.1f} {sum(m.idle.values()):7.1f} {'':8}   {sum(map(m.per_award, m.cpu)):8.3f}"
    )


async def replay_vs_redis_benchmark(settings: Settings, projection: RedisProjection) -> None:
    print("\n== replay: rebuild of the projection from the totals topic, then redis-benchmark", flush=True)
    started = time.perf_counter()
    report_ = await rebuild(settings, projection)
    replay_s = time.perf_counter() - started
    totals = report_.records
    replay_rate = totals / replay_s
    url = re.match(r"redis://[^:/]+:(\d+)", settings.redis.url)
    reference = statistics.median(
        redis_benchmark([int(url.group(1)) if url else 6379], 200_000) for _ in range(3)
    )
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
    p.add_argument(
        "--connections", type=int, default=2000, help="most HTTP connections open at once (default 2000)"
    )
    p.add_argument(
        "--generators",
        type=int,
        default=2,
        help="load generator processes (default 2; 0: the load runs in the benchmark process itself)",
    )
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
    p.add_argument(
        "--drain",
        type=float,
        default=120,
        help="longest wait for the audit backlog after the load (default 120 s)",
    )
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
