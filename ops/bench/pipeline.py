"""Pipeline benchmark: signed awards through the HTTP intake for a bounded time, then a replay.

The load is open loop (``load.py``): every request leaves at its scheduled time, from
``--generators`` processes that report their own CPU, and requests that could not leave on time are
counted. Prints offered and accepted awards/s, acknowledgement latency, freshness (acknowledged ->
visible in Redis, by the projection's asOf positions), CPU and memory of every process and server
with the CPU per accepted award over the load and its drain, and the projector's replay rate next
to redis-benchmark running the same Lua script pipelined on the same Redis.

``--rates 500,1000,1500`` measures each rate in turn on the same processes (``--duration`` each,
after ``--warmup`` s of quiet), one report per rate; the recorded run holds them all, which is what
``ops/bench/report`` plots against the offered rate.

Run through ``ops/bench/pipeline`` (it starts the servers of ``ops/services env``). Options: ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx

from ops.bench.freshness import PositionHistory, freshness, freshness_figures
from ops.bench.kit import (
    Column,
    CpuClock,
    by_process,
    children,
    parser,
    percentile,
    percentiles,
    rss_mib,
    shown,
    table,
)
from ops.bench.load import (
    LATE_S,
    Results,
    Schedule,
    add_options,
    bench_board,
    bench_settings,
    collect,
    drive,
    generator_processes,
)
from ops.bench.record import Figures, recorded
from ops.bench.steps import redis_benchmark
from ops.bench.vegeta import Vegeta, vegeta_binary
from ops.stack import SERVICES, data_dir, region_env, server_pids, start_service, stop_all, until_ready
from regions.core.boards import Board
from regions.projector.rebuild import rebuild
from regions.runtime.settings import AuditSettings, Settings
from regions.stores.redis.projection import RedisProjection, connect_redis

ROOT = Path(__file__).resolve().parents[2]
BENCH = "bench (this process)"
GENERATORS = "load generators"


async def audit_backlog(settings: Settings) -> int:
    async with httpx.AsyncClient() as http:
        lag = (await http.get(f"http://127.0.0.1:{settings.audit.health_port}/healthz")).json()["lag"]
    return sum(sum(partitions.values()) for partitions in lag.values())


def with_children(pids: dict[str, int]) -> dict[str, int]:
    """The processes and, for one that forked several (intake workers), each child by name."""
    found = {}
    for name, pid in pids.items():
        found.update({f"{name} [{n}]": child for n, child in enumerate(children(pid))})
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


async def main(args: argparse.Namespace) -> Figures:
    tag = uuid.uuid4().hex[:8]
    settings = bench_settings(f"bench{tag}")
    rates = args.rates or [args.rate]
    if args.generator == "vegeta":
        vegeta_binary()  # a build takes the cores for a minute: before anything is measured, not during
    print(
        f"== setup: topics {settings.kafka.topic_prefix}.*, {args.duration:.0f}s at {' then '.join(map(str, rates))}/s"
        f" in batches of {args.batch}"
        f" from {args.generators or 'this'} generator process(es), audit cap {args.audit_rate or 'none'},"
        f" audit niceness {args.audit_niceness}"
    )
    board = await bench_board(settings, tag)

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
    points, replay = [], None
    try:
        await until_ready(settings, procs, logs, args.warmup * 10)
        for rate in rates:
            await asyncio.sleep(args.warmup)
            at_rate = argparse.Namespace(**{**vars(args), "rate": rate})
            measured = await measure(at_rate, settings, board, procs, projection)
            report(at_rate, measured)
            points.append(measured.figures(rate, args.duration))
        stop_all(procs.values())  # the replay is measured on an otherwise idle machine, like redis-benchmark
        if not args.no_replay:
            replay = await replay_vs_redis_benchmark(settings, projection)
    finally:
        stop_all(procs.values())
        await redis.aclose()
    return {"points": points, "replay": replay}


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

    def figures(self, rate: int, duration: float) -> Figures:
        """One rate's figures as the run records them (what ``report`` prints)."""
        r = self.results
        return {"rate": rate, "offered_per_s": r.offered / duration, "seconds": self.wall,
                "drained_s": self.drained - self.wall, **r.figures(self.wall), **freshness_figures(r),
                "processes": by_process(cpu_percent=self.cpu, idle_percent=self.idle, rss_mib=self.rss,
                                        cpu_ms_per_award={n: self.per_award(n) for n in self.cpu})}  # fmt: skip


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
    pids = {**services, **server_pids(data_dir()), BENCH: os.getpid()}
    spies = [] if args.profile is None else profile(
        {n: p for n, p in services.items() if n != "intake" or args.intake_workers == 1},
        args.duration, Path(args.profile),
    )  # fmt: skip
    idle_clock = CpuClock(pids)
    await asyncio.sleep(args.idle)  # no load: what every process costs anyway (polls, heartbeats, others)
    idle = idle_clock.read().percent()
    results, history, stop = Results(), PositionHistory(), asyncio.Event()
    schedule = Schedule.of(args, settings.intake.port, board.id, args.duration, start_at=time.time() + 1.0,
                           max_connections=max(1, args.connections // max(1, args.generators)))  # fmt: skip
    vegeta = Vegeta(schedule) if args.generator == "vegeta" else None
    generators = generator_processes(schedule, args.generators) if args.generators and not vegeta else []
    async with vegeta if vegeta is not None else contextlib.nullcontext():  # its targets, before the clock
        await asyncio.sleep(max(0.0, schedule.start_at - time.time()))
        clock = CpuClock(pids)
        watcher = asyncio.create_task(history.watch(projection, stop, results.pending))
        print("== load running ...", flush=True)
        if vegeta is not None:
            await vegeta.attack()
        elif generators:
            await collect(generators, args.batch, results)
        else:
            await drive(schedule, results)
        during = clock.read()
        if vegeta is not None:
            await vegeta.collect(results)
    wall, cpu = during.wall, during.percent()
    rss = {n: rss_mib(p) for n, p in pids.items()}
    stop.set()
    print(
        "== load done; draining (every acknowledged award visible, the audit backlog written) ...", flush=True
    )
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(watcher, 60)  # what is not visible by then is reported as never visible
    if "audit" in procs:
        await drain_audit(settings, within=args.drain)
    after = clock.read()
    drained, used = after.wall, after.seconds
    if generators or vegeta is not None:
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
    print(
        f"\n== intake ({m.wall:.1f} s, {args.batch} awards per request, open loop: at most {args.connections} connections)"
    )
    print(f"offered awards/s       {r.offered / args.duration:10.0f}   (target rate {args.rate}/s)")
    print(f"accepted awards/s      {r.accepted / m.wall:10.0f}   ({r.accepted} accepted)")
    print(f"rejected requests      {sum(r.rejected.values()):10d}   {r.rejected or ''}")
    print(f"late requests          {r.late_sends:10d}   (sent over {LATE_S * 1000:.0f} ms after their time, so the rate "
          f"was not offered; send delay p99 {percentile(r.send_delay_ms, .99):.1f} ms)")  # fmt: skip
    print(f"  waited for a connection{r.waited_for_connection:9d}   (all {args.connections} were busy: the intake "
          f"answered too slowly; the rest of the late ones: the generators' own CPU; {r.connections} open at most)")  # fmt: skip
    print(f"ack latency ms         {shown(percentiles(r.ack_ms), '8.1f')}")
    print(f"freshness ms           {shown(percentiles(r.fresh_ms), '8.1f')}"
          f"   ({len(r.fresh_ms)} samples, {len(r.pending)} never visible)")  # fmt: skip
    print(
        f"\n== processes (idle: the {args.idle:.0f} s before the load; drained {m.drained - m.wall:.1f} s after it)"
    )
    per_award = {name: m.per_award(name) for name in m.cpu}
    columns = [Column("CPU %", m.cpu, "7.1f"), Column("idle %", m.idle, "7.1f"),
               Column("RSS MiB", m.rss, "8.0f", summed=False),
               Column("CPU ms per accepted award (load and drain, above idle)", per_award, "8.3f", gap="   ")]  # fmt: skip
    print("\n".join(table(24, columns)))


async def replay_vs_redis_benchmark(settings: Settings, projection: RedisProjection) -> Figures:
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
    return {"totals": totals, "seconds": replay_s, "totals_per_s": replay_rate,
            "redis_benchmark_calls_per_s": reference, "ratio": replay_rate / reference}  # fmt: skip


def parse() -> argparse.Namespace:
    p = parser(__doc__)
    add_options(p, rate=3000, rate_help="awards per second offered", rates=True,
                connections=2000, connections_help="most HTTP connections open at once")  # fmt: skip
    p.add_argument(
        "--generators",
        type=int,
        default=2,
        help="load generator processes (default 2; 0: the load runs in the benchmark process itself)",
    )
    p.add_argument("--generator", choices=("python", "vegeta"), default="python",
                   help="who sends the load: --generators Python processes (default) or vegeta, a compiled "
                        "open-loop generator built once from the Go module proxy (its CPU is reported apart)")  # fmt: skip
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
        "--warmup",
        type=float,
        default=8,
        help="seconds to settle once every process is ready, and before each rate (default 8)",
    )
    return p.parse_args()


if __name__ == "__main__":
    options = parse()
    recorded("pipeline", options, lambda: asyncio.run(main(options)))
