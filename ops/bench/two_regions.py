"""Two-region benchmark: awards accepted in both regions, freshness in each, replication between them.

Regions ``eu`` and ``us`` each run their own Kafka cluster and Redis (started by ``ops/bench/regions``)
and their own intake, processor, projector, audit sink and one replicator copying the other
region's awards. The benchmark board is homed in ``eu``. Signed awards go to both intakes, half of
``--rate`` each, for ``--duration`` s in batches of ``--batch``. Prints, per region:

- **ack**: request scheduled -> 202 from that region's intake;
- **REGIONAL freshness**: acknowledged -> visible in the accepting region's projection;
- **replication visibility**: acknowledged in one region -> visible in the other region's
  projection (for awards accepted in ``us`` that is the board's HOME projection, in ``eu``);

all by the projections' asOf positions per (accepting region, partition); then CPU and RSS of every
process and server, and the replicators' lag in records and seconds (sampled from their metrics).

``--rates 1000,2000,3000`` measures each rate in turn on the same regions (``--duration`` each) and
ends with one row per rate, saying which meet the targets (ack p99 < 200 ms and REGIONAL freshness
p99 < 1 s in both regions, HOME visibility of the other region's awards p99 < 2 s, the offered rate
accepted, every acknowledged award visible) and the highest rate that does. The board catalog and
audit live in a keyspace of the benchmark's own on the running Cassandra, dropped at the end.

Run through ``ops/bench/regions`` (it starts and stops the servers). Options: ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import re
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import httpx

from ops.bench.freshness import PositionHistory
from ops.bench.kit import (
    Column,
    CpuClock,
    JitClock,
    by_process,
    distribution,
    parser,
    percentile,
    percentiles,
    rss_mib,
    shown,
    table,
)
from ops.bench.load import Pending, Results, Schedule, add_options, drive
from ops.bench.record import Figures, recorded
from ops.bench.vegeta import Vegeta, vegeta_binary
from ops.clusters import bootstrap_topics
from ops.stack import (
    data_dir,
    free_port,
    log_tail,
    region_env,
    server_pids,
    stop_all,
    wait_ready,
    with_free_ports,
)
from regions.core.boards import Board
from regions.runtime.settings import Settings, load_settings
from regions.runtime.supervisor import Program, port_owner, region_programs, taken_ports
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.session import apply_migrations, connect
from regions.stores.redis.projection import RedisProjection, connect_redis

ROOT = Path(__file__).resolve().parents[2]
MEASURED = ("intake", "processor", "projector", "audit")  # and the replicators (--all-processes: every one)
ACK_P99_MS, REGIONAL_P99_MS, HOME_P99_MS = 200.0, 1000.0, 2000.0  # the targets
VEGETA = "load generators (vegeta)"  # their CPU is counted apart, from the kernel's accounting
CARRIED = 0.95
GOODPUT, REFUSAL_MS = 0.90, 50.0  # overload at 2R: goodput share of R, refusal p99  # a rate is carried when at least this share of the offered awards was accepted


@contextlib.contextmanager
def environment(variables: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.update(variables)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def services_env(region: str) -> dict[str, str]:
    """The LB_* settings ``ops/services env --region`` prints for one region of the running pair."""
    out = subprocess.run([str(ROOT / "ops/services"), "env", "--region", region],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    found = {}
    for line in out.splitlines():
        if line.startswith("export "):
            name, _, value = line.removeprefix("export ").partition("=")
            found[name] = shlex.split(value)[0] if value else ""
    return found


@dataclass
class Region:
    name: str
    settings: Settings
    programs: list[Program]
    projection: RedisProjection
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    results: Results = field(default_factory=Results)


def measured(settings: Settings, every: bool) -> list[Program]:
    """The processes the benchmark runs in a region: ``every`` one ops/run runs, or those awards
    pass through (no gateway, no lifecycle worker)."""
    programs = region_programs(settings)
    if every:
        return programs
    return [p for p in programs if p.name in MEASURED or p.name.startswith("replicator")]


def region_settings(name: str, tag: str, free_ports: bool, every: bool) -> tuple[Settings, list[Program]]:
    """The region's settings from ``ops/services env`` with the benchmark's own topics, keys and
    keyspace; the processes' fixed ports (8080 + 100*i ..., as ``ops/run``) unless ``free_ports``
    or one of them is taken, otherwise free ports."""
    with environment(services_env(name)):
        base = load_settings()
    settings = base.model_copy(update={
        "kafka": base.kafka.model_copy(update={"topic_prefix": f"bench{tag}"}),
        "redis": base.redis.model_copy(update={"key_prefix": f"bench{tag}"}),
        "cassandra": base.cassandra.model_copy(update={"keyspace": f"lbbench_regions_{tag}"}),
        "intake": base.intake.model_copy(update={"rate_per_key": 1e9, "burst_per_key": 1e9}),
        # in the benchmark's data folder, removed with it
        "processor": base.processor.model_copy(
            update={"store_dir": str(Path(os.environ["LB_OPS_DATA_DIR"]) / "processor")}
        ),
    })  # fmt: skip
    programs = measured(settings, every)
    taken = taken_ports(programs)
    if free_ports or taken:
        if taken:
            print(f"   region {name}: taken {', '.join(taken)}: its processes use free ports instead")
        settings = with_free_ports(settings)
        settings = settings.model_copy(
            update={
                "replicator": settings.replicator.model_copy(update={"health_port": free_port()}),
                "gateway": settings.gateway.model_copy(update={"port": free_port()}),
            }
        )
        programs = measured(settings, every)
        taken = taken_ports(programs)  # the next ports after the replicator's may be taken
        if taken:
            raise SystemExit(f"region {name}: ports still taken: {', '.join(taken)}")
    return settings, programs


def start(region: Region, args: argparse.Namespace, logs: Path) -> None:
    env = {**os.environ, **region_env(region.settings),
           "LB_INTAKE__RATE_PER_KEY": "1e9", "LB_INTAKE__BURST_PER_KEY": "1e9",
           "LB_AUDIT__NICENESS": str(args.audit_niceness),
           "LB_GATEWAY__PORT": str(region.settings.gateway.port)}  # fmt: skip
    for program in region.programs:
        with (logs / f"{region.name}-{program.name}.log").open("wb") as log:
            region.procs[program.name] = subprocess.Popen(
                list(program.argv), env={**env, **dict(program.env)}, stdout=log, stderr=subprocess.STDOUT
            )


async def until_ready(regions: list[Region], logs: Path, within: float) -> None:
    """Every process of every region answers /readyz within ``within`` seconds from now, all together."""
    deadline = time.monotonic() + within
    for region in regions:
        for program in region.programs:
            name, url = f"{region.name}-{program.name}", f"http://127.0.0.1:{program.port}"
            tail = partial(log_tail, logs / f"{name}.log")
            await wait_ready(
                name, url, region.procs[program.name], tail, max(0.0, deadline - time.monotonic())
            )
        print(f"   region {region.name} ready: " + ", ".join(f"{p.name} :{p.port}" for p in region.programs))


@dataclass
class Visibility:
    """Awards acknowledged by ``source`` becoming visible in ``seen_in``'s projection."""

    source: Region
    seen_in: Region
    label: str
    ms: list[float] = field(default_factory=list)
    waiting: list[Pending] = field(default_factory=list)


def visibility(views: list[Visibility], histories: Mapping[str, PositionHistory]) -> None:
    """Each view's acknowledged batches against the history of its projection's asOf positions: an
    acknowledged batch is visible once the position of its (accepting region, partition) there
    reached its offset. Found after the load, so a generator that reports its answers only at the
    end (vegeta) is measured as one that reports each as it comes."""
    for view in views:
        history = histories[view.seen_in.name]
        for acked, source, offset in view.source.results.pending:
            seen = history.visible_at(acked, source, offset)
            if seen is None:
                view.waiting.append((acked, source, offset))
            else:
                view.ms.append((seen - acked) * 1000)


async def replicator_lag(
    regions: list[Region], samples: dict[str, list[tuple[float, float]]], stop: asyncio.Event
) -> None:
    """Every 0.5 s, each replicator's lag summed over partitions: records, and the largest in seconds."""
    async with httpx.AsyncClient() as http:
        while not stop.is_set():
            for region in regions:
                for p in region.programs:
                    if not p.name.startswith("replicator"):
                        continue
                    with contextlib.suppress(httpx.HTTPError):
                        text = (await http.get(f"http://127.0.0.1:{p.port}/metrics")).text
                        records = seconds = 0.0
                        for line in text.splitlines():
                            if line.startswith("lb_replicator_lag_records{"):
                                records += float(line.rsplit(" ", 1)[1])
                            elif line.startswith("lb_replicator_lag_seconds{"):
                                seconds = max(seconds, float(line.rsplit(" ", 1)[1]))
                        samples.setdefault(f"{region.name} {p.name}", []).append((records, seconds))
            await asyncio.sleep(0.5)


def bench_servers(regions: list[Region]) -> dict[str, int]:
    """This benchmark's Kafka and Redis of each region, and the Cassandra node (by its port) when
    this user can see its process."""
    found = {n: p for n, p in server_pids(data_dir()).items() if n.startswith(("kafka-", "redis-"))}
    owner = re.match(r"pid (\d+)", port_owner(regions[0].settings.cassandra.port) or "")
    if owner is not None:
        found["cassandra (shared)"] = int(owner.group(1))
    return {n: p for n, p in found.items() if Path(f"/proc/{p}").exists()}


async def main(args: argparse.Namespace) -> Figures:
    tag = uuid.uuid4().hex[:8]
    names = args.regions.split(",")
    if len(names) != 2:
        raise SystemExit("--regions names exactly two regions")
    if args.warm_rate < 0:
        raise SystemExit(f"--warm-rate is awards/s, 0 or more (0: the first rate), got {args.warm_rate}")
    rates = [args.rate, 2 * args.rate] if args.overload else args.rates or [args.rate]
    if args.generator == "vegeta":
        vegeta_binary()  # a build takes the cores for a minute: before anything is measured, not during
    print(f"== setup: topics bench{tag}.*, {args.duration:.0f} s at {' then '.join(map(str, rates))} awards/s in "
          f"batches of {args.batch}, half into each region's intake; board homed in {names[0]}", flush=True)  # fmt: skip
    regions = []
    for name in names:
        settings, programs = region_settings(name, tag, args.free_ports, args.all_processes)
        redis = connect_redis(settings.redis)
        regions.append(Region(name, settings, programs, RedisProjection(redis, settings.redis.key_prefix)))
    cassandra = regions[0].settings.cassandra
    print(
        f"   keyspace {cassandra.keyspace} on Cassandra {cassandra.contact_points[0]}:{cassandra.port}",
        flush=True,
    )
    apply_migrations(cassandra)
    await bootstrap_topics(*(r.settings for r in regions))
    cluster, session = connect(cassandra)
    board = Board(f"bench-{tag}", "Regions benchmark", names[0])
    await CassandraCatalog(session).create(board)
    logs = Path(os.environ["LB_OPS_DATA_DIR"]) / "logs" / f"bench-{tag}"
    logs.mkdir(parents=True, exist_ok=True)
    kept_logs = ROOT / ".data" / "logs" / f"bench-regions-{tag}"
    rows: list[Row] = []
    points: list[Figures] = []
    try:
        for region in regions:
            start(region, args, logs)
        await until_ready(regions, logs, 180)  # a loaded machine starts ten processes slowly
        await asyncio.sleep(args.warmup)
        if args.warm_load:
            await warm_up(args, regions, board, args.warm_rate or rates[0])
        idle, compiling = await idle_cpu(regions, args.idle) if args.idle else ({}, {})
        for rate in rates:
            row, figures = await measure(args, regions, board, rate)
            rows.append(row)
            points.append(figures)
        if len(rows) > 1:
            summary(rows)
        overload = overload_verdict(args.rate, args.duration, regions, rows[-1]) if args.overload else None
    finally:
        stop_all(p for region in regions for p in region.procs.values())
        for region in regions:
            await region.projection.redis.aclose()
        session.execute(f"DROP KEYSPACE IF EXISTS {cassandra.keyspace}", timeout=120)
        cluster.shutdown()
        kept_logs.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(logs, kept_logs, dirs_exist_ok=True)  # the data folder is removed at the end
        print(f"logs: {kept_logs}")
    met = [row.rate for row in rows if not row.misses]
    targets = {"ack_p99_ms": ACK_P99_MS, "regional_p99_ms": REGIONAL_P99_MS, "home_p99_ms": HOME_P99_MS,
               "carried": CARRIED}  # fmt: skip
    return {"regions": names, "home": names[0], "targets": targets, "points": points, "idle_cpu_percent": idle,
            "idle_jit_cpu_percent": compiling,
            "overload": overload,
            "highest_rate_meeting_targets": max(met, default=None)}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Row:
    """One rate's figures against the targets."""

    rate: int
    accepted_per_s: float
    ack_p99_ms: dict[str, float]
    regional_p99_ms: dict[str, float]
    home_ms: tuple[float, float, float]  # p50, p95, p99 of the other region's awards in HOME
    never_seen: int
    misses: tuple[str, ...]  # the targets missed; empty: all met


def judge(rate: int, duration: float, regions: list[Region], views: list[Visibility]) -> Row:
    """The figures of one rate against the targets. The rate is carried when the awards accepted
    reach ``CARRIED`` of those offered (``rate`` for ``duration`` s); accepted/s is over the load's
    ``duration`` too (the generator's start and the last answers lengthen the wall time, not the load)."""
    home, other = regions
    accepted = sum(r.results.accepted for r in regions)
    ack = {r.name: percentile(r.results.accepted_ms, 0.99) for r in regions}
    regional = {v.source.name: percentile(v.ms, 0.99) for v in views if v.source is v.seen_in}
    [to_home] = [v for v in views if v.source is other and v.seen_in is home]
    home_ms = (percentile(to_home.ms, 0.5), percentile(to_home.ms, 0.95), percentile(to_home.ms, 0.99))
    never_seen = sum(len(v.waiting) for v in views)
    offered = rate * duration
    misses = (
        [f"accepted {accepted} < {CARRIED:.0%} of the {offered:.0f} offered"]
        if accepted < CARRIED * offered
        else []
    )
    misses += [f"ack p99 {n} {ms:.0f} ms" for n, ms in ack.items() if not ms < ACK_P99_MS]
    misses += [f"REGIONAL p99 {n} {ms:.0f} ms" for n, ms in regional.items() if not ms < REGIONAL_P99_MS]
    if not home_ms[2] < HOME_P99_MS:
        misses.append(f"HOME visibility p99 {home_ms[2]:.0f} ms")
    if never_seen:
        misses.append(f"{never_seen} acknowledged batches never visible")
    return Row(rate, accepted / duration, ack, regional, home_ms, never_seen, tuple(misses))


def overload_verdict(rate: int, duration: float, regions: list[Region], over: Row) -> Figures:
    """At 2R (the regions' results of the last load): the accepted awards' ack p99 under the target,
    goodput (awards accepted over the load's seconds) at least ``GOODPUT`` of R, refusals answered
    within ``REFUSAL_MS`` at p99, and every acknowledged award visible (nothing accepted lost)."""
    accepted_ms = [ms for r in regions for ms in r.results.accepted_ms]
    refused_ms = [ms for r in regions for ms in r.results.refused_ms]
    goodput = sum(r.results.accepted for r in regions) / duration / rate
    checks = {
        f"accepted ack p99 < {ACK_P99_MS:.0f} ms": percentile(accepted_ms, 0.99) < ACK_P99_MS,
        f"goodput >= {GOODPUT:.0%} of R": goodput >= GOODPUT,
        f"refusal p99 < {REFUSAL_MS:.0f} ms": not refused_ms or percentile(refused_ms, 0.99) < REFUSAL_MS,
        "every acknowledged award visible": over.never_seen == 0,
    }
    print(f"\n== overload at 2R = {2 * rate}/s (R = {rate}/s): goodput {goodput:.0%} of R, accepted ack ms "
          f"{shown(percentiles(accepted_ms))}, refusals {len(refused_ms)} ms {shown(percentiles(refused_ms))}")  # fmt: skip
    print("   " + "; ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in checks.items()))
    return {"rate": rate, "goodput_share": goodput, "accepted_ms": distribution(accepted_ms),
            "refused_ms": distribution(refused_ms), "checks": checks}  # fmt: skip


def process_pids(regions: list[Region]) -> dict[str, int]:
    """Every process of both regions, their servers, and this benchmark's own process."""
    pids = {f"{r.name} {n}": p.pid for r in regions for n, p in r.procs.items()}
    return pids | bench_servers(regions) | {"bench (load + watch)": os.getpid()}


async def idle_cpu(regions: list[Region], seconds: float) -> tuple[dict[str, float], dict[str, float]]:
    """The CPU each process takes while no award is sent, as % of one core over ``seconds``; and the
    part of it the JVMs (brokers, Cassandra) spent compiling code, which fades as their JIT finishes
    with the paths the load and the quiet use."""
    print(f"== idle: {seconds:.0f} s with no load ...", flush=True)
    pids = process_pids(regions)
    pids.pop("bench (load + watch)")
    clock, jit_clock = CpuClock(pids), JitClock(pids)
    await asyncio.sleep(seconds)
    idle, compiling = clock.read().percent(), jit_clock.read().percent()
    jit = {name: compiling.get(name, 0.0) for name in idle}  # the processes that are no JVM compile nothing
    print("\n".join(table(32, [Column("idle CPU %", idle, "10.1f"), Column("of it JIT %", jit, "12.1f")])))
    return idle, compiling


async def warm_up(args: argparse.Namespace, regions: list[Region], board: Board, rate: int) -> None:
    """``--warm-load`` seconds of load at ``rate``, not measured: the brokers' JIT compiles its hot paths
    and every client and cache settles before the first measured rate."""
    print(f"== warming up: {rate} awards/s for {args.warm_load:.0f} s (not measured) ...", flush=True)
    warm = argparse.Namespace(**{**vars(args), "duration": args.warm_load, "generator": "python"})
    await asyncio.gather(*(drive(half(warm, r, board, rate), Results()) for r in regions))
    await asyncio.sleep(args.warmup)


def half(args: argparse.Namespace, region: Region, board: Board, rate: int) -> Schedule:
    """The share of one region's intake: half the rate, on half the connections."""
    return Schedule.of(args, region.settings.intake.port, board.id, args.duration, rate=rate / 2,
                       max_connections=args.connections // 2)  # fmt: skip


async def measure(
    args: argparse.Namespace, regions: list[Region], board: Board, rate: int
) -> tuple[Row, Figures]:
    """One run of ``args.duration`` s at ``rate`` awards/s, reported in full; its row against the
    targets and its figures as the run records them."""
    for region in regions:
        region.results = Results()
    home, other = regions
    views = [
        Visibility(home, home, f"REGIONAL freshness {home.name} (= HOME)"),
        Visibility(other, other, f"REGIONAL freshness {other.name}"),
        Visibility(other, home, f"accepted in {other.name} -> HOME ({home.name})"),
        Visibility(home, other, f"accepted in {home.name} -> {other.name}"),
    ]
    pids = process_pids(regions)
    stop, lag_samples = asyncio.Event(), dict[str, list[tuple[float, float]]]()
    histories = {r.name: PositionHistory() for r in regions}
    accepted: list[Pending] = []  # filled once the load is over: what every projection must reach
    async with contextlib.AsyncExitStack() as vegeta_files:
        # vegeta's signed targets are written before the clocks start, and its answers read after
        # they stop: the CPU figures are the load's alone
        vegetas = [await vegeta_files.enter_async_context(Vegeta(half(args, r, board, rate), seed=i + 1))
                   for i, r in enumerate(regions)] if args.generator == "vegeta" else []  # fmt: skip
        watchers = [asyncio.create_task(histories[r.name].watch(r.projection, stop, accepted)) for r in regions]
        sampler = asyncio.create_task(replicator_lag(regions, lag_samples, stop))
        clock, jit_clock = CpuClock(pids), JitClock(pids)
        print(f"== load running: {rate} awards/s for {args.duration:.0f} s ({args.generator}) ...", flush=True)
        loads = [v.attack() for v in vegetas] or [drive(half(args, r, board, rate), r.results) for r in regions]
        try:
            await asyncio.gather(*loads)
        except BaseException:
            stop.set()
            for task in (*watchers, sampler):
                task.cancel()
            raise
        use, compiling = clock.read(), jit_clock.read().percent()
        for vegeta, region in zip(vegetas, regions, strict=False):
            await vegeta.collect(region.results)
    wall, cpu = use.wall, use.percent()
    generator_cpu = sum(r.results.generator_cpu_s for r in regions)
    if generator_cpu:
        cpu[VEGETA] = generator_cpu / wall * 100
    jit = {name: compiling.get(name, 0.0) for name in cpu}  # the processes that are no JVM compile nothing
    rss = {n: rss_mib(p) for n, p in pids.items()} | ({VEGETA: math.nan} if VEGETA in cpu else {})
    print("== load done; waiting (at most 60 s) for every acknowledged award to be visible ...", flush=True)
    accepted.extend(p for r in regions for p in r.results.pending)
    stop.set()
    try:
        await asyncio.wait_for(asyncio.gather(*watchers), 60)
    except TimeoutError:
        print("   some awards were still not visible after 60 s")
    await sampler
    visibility(views, histories)
    args_at_rate = argparse.Namespace(**{**vars(args), "rate": rate})
    report(args_at_rate, regions, views, wall, cpu, jit, rss, lag_samples)
    row = judge(rate, args.duration, regions, views)
    print(
        f"\n== targets at {rate}/s: " + ("all met" if not row.misses else "missed: " + "; ".join(row.misses))
    )
    figures = {"rate": rate, "seconds": wall, "accepted_per_s": row.accepted_per_s,
               "by_region": {r.name: r.results.figures(wall) for r in regions},
               "visibility": [{"label": v.label, "accepted_in": v.source.name, "seen_in": v.seen_in.name,
                               "ms": distribution(v.ms), "never_seen": len(v.waiting)} for v in views],
               "replicators": {name: {"lag_records": distribution(s[0] for s in samples),
                                      "lag_seconds": distribution(s[1] for s in samples)}
                               for name, samples in lag_samples.items()},
               "processes": by_process(cpu_percent=cpu, jit_percent=jit, rss_mib=rss,
                                       cpu_ms_per_award=cpu_ms_per_award(cpu, wall, row.accepted_per_s * args.duration)),
               "generator": args.generator, "load_average": os.getloadavg()[0],
               "misses": row.misses}  # fmt: skip
    return row, figures


def summary(rows: list[Row]) -> None:
    """One row per rate, which meet the targets, and the highest rate that does."""
    print(f"\n== rates (targets: ack p99 < {ACK_P99_MS:.0f} ms, REGIONAL freshness p99 < {REGIONAL_P99_MS:.0f} ms, "
          f"HOME visibility p99 < {HOME_P99_MS:.0f} ms; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})")  # fmt: skip

    def pair(values: dict[str, float]) -> str:
        return " / ".join("-" if math.isnan(v) else f"{v:.0f}" for v in values.values())

    names = " / ".join(rows[0].ack_p99_ms)
    print(f"{'offered/s':>9} {'accepted/s':>10}  {'ack p99 ms ' + names:>22}  {'REGIONAL p99 ms ' + names:>26}  "
          f"{'HOME p50/p95/p99 ms':>20}  meets")  # fmt: skip
    for row in rows:
        home = " / ".join(f"{v:.0f}" for v in row.home_ms)
        meets = "yes" if not row.misses else "no: " + "; ".join(row.misses)
        print(f"{row.rate:>9} {row.accepted_per_s:>10.0f}  {pair(row.ack_p99_ms):>22}  {pair(row.regional_p99_ms):>26}  "
              f"{home:>20}  {meets}")  # fmt: skip
    met = [row.rate for row in rows if not row.misses]
    print(f"highest rate meeting the targets: {max(met)} awards/s" if met else "no rate met the targets")


def report(
    args: argparse.Namespace,
    regions: list[Region],
    views: list[Visibility],
    wall: float,
    cpu: dict[str, float],
    jit: dict[str, float],
    rss: dict[str, float],
    lag: dict[str, list[tuple[float, float]]],
) -> None:
    def ms(xs: list[float]) -> str:
        return shown(percentiles(xs), "7.0f")

    accepted = sum(r.results.accepted for r in regions)
    print(f"\n== load ({wall:.1f} s, {args.batch} awards per request)")
    print(f"accepted awards/s, both regions  {accepted / args.duration:8.0f}   (offered {args.rate}/s)")
    for r in regions:
        res = r.results
        print(f"  {r.name}: accepted/s {res.accepted / args.duration:6.0f}  rejected requests {sum(res.rejected.values())} "
              f"{res.rejected or ''}  late send slots {res.late_sends}")  # fmt: skip
        print(f"  {r.name}: ack ms (accepted)               {ms(res.accepted_ms)}")
        if res.refused_ms:
            print(f"  {r.name}: refusal ms                      {ms(res.refused_ms)}")
    print("\n== visibility ms (acknowledged -> position reached in the projection)")
    for v in views:
        print(f"  {v.label:36} {ms(v.ms)}   ({len(v.ms)} batches, {len(v.waiting)} never seen)")
    print("\n== replicators (sampled every 0.5 s during the load)")
    for name, samples in lag.items():
        records, seconds = [s[0] for s in samples], [s[1] for s in samples]
        print(f"  {name:26} lag records {shown(percentiles(records, (0.5, 0.99)), '6.0f')}"
              f"  max {max(records, default=0):6.0f};  lag s p99 {percentile(seconds, 0.99):5.2f}")  # fmt: skip
    per_award = cpu_ms_per_award(cpu, wall, accepted)
    print(f"\n== processes during the load ({os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f})")
    print("\n".join(table(32, [Column("CPU %", cpu, "7.1f"), Column("of it JIT %", jit, "12.1f"),
                                Column("CPU ms/award", per_award, "12.3f"),
                                Column("RSS MiB", rss, "8.0f", summed=False)])))  # fmt: skip


def cpu_ms_per_award(cpu_percent: Mapping[str, float], wall: float, accepted: float) -> dict[str, float]:
    """Each process's CPU over the load, in ms per award accepted (both regions' awards)."""
    return {name: pct / 100 * wall * 1000 / max(1, accepted) for name, pct in cpu_percent.items()}


def parse() -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument("--regions", default="eu,us", help="the two regions; the board is homed in the first")
    add_options(p, rate=3000, rate_help="awards per second offered, both regions", rates=True,
                connections=32, connections_help="HTTP connections, split over the regions")  # fmt: skip
    p.add_argument(
        "--free-ports",
        action="store_true",
        help="give every process a free port instead of region i's fixed 8080 + 100*i ones",
    )
    p.add_argument("--audit-niceness", type=int, default=10, help="LB_AUDIT__NICENESS (default 10)")
    p.add_argument("--generator", choices=("python", "vegeta"), default="python",
                   help="who sends the load: this process (python, default) or vegeta, a compiled open-loop "
                        "generator built once from the Go module proxy, whose CPU is reported apart")  # fmt: skip
    p.add_argument("--overload", action="store_true",
                   help="measure --rate R, then 2R, and judge the overload at 2R: accepted awards keep ack p99 < 200 "
                        "ms, goodput >= 90%% of R, refusals answered within 50 ms, nothing accepted lost")  # fmt: skip
    p.add_argument(
        "--all-processes",
        action="store_true",
        help="run every process of a region as ops/run does (gateway and lifecycle worker too)",
    )
    p.add_argument(
        "--warmup", type=float, default=8, help="seconds to settle once every process is ready (default 8)"
    )
    p.add_argument("--idle", type=float, default=20,
                   help="seconds of no load, after the warm-up, over which each process's idle CPU is measured "
                        "(default 20; 0: not measured)")  # fmt: skip
    p.add_argument("--warm-load", type=float, default=20,
                   help="seconds of unmeasured load (at --warm-rate) before measuring, so freshly started "
                        "brokers have compiled their hot paths (default 20; 0: none)")  # fmt: skip
    p.add_argument("--warm-rate", type=int, default=0,
                   help="awards/s of the warm-up load (default: the first rate); the JVMs compile a hot path "
                        "after so many calls, so a warm-up at a low rate leaves them compiling during the load")  # fmt: skip
    return p.parse_args()


if __name__ == "__main__":
    options = parse()
    recorded("regions", options, lambda: asyncio.run(main(options)))
