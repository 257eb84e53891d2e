"""HOME_ROUTED boards: acknowledgement latency from the region that is not the board's home.

Region ``eu`` (the home of both benchmark boards) is the running Kafka; region ``us`` is a second
Kafka cluster started for the run (stopped at the end), with us's intake. Awards go to us's intake
at ``--rate`` awards a second (open loop, ``load.py``; ``--warmup`` s unmeasured first, then
``--duration`` s measured) for a REGIONAL board (us accepts them itself: one produce to us's
cluster) and for a HOME_ROUTED board (us produces them into eu's awards topic and answers once eu
acknowledged), in ``--rounds`` rounds of alternating order. Prints, per round and board and over
all rounds, ack p50/p95/p99, the awards accepted, and the network round trips added: the Produce
requests us's intake sent to eu's cluster, counted by that producer
(``lb_intake_home_produce_requests_total`` on the intake's ``/metrics``), per request and per award.
Both clusters run on this machine, so a round trip to the home is a loopback one here; between real
regions each adds the regions' network round trip.

Run through ``ops/bench/home_routed`` (it starts the one-region servers). Options: ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import re
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from ops.bench.kit import parser, percentiles, shown
from ops.bench.load import (
    LATE_S,
    Results,
    Schedule,
    add_options,
    bench_settings,
    collect,
    drive,
    generator_processes,
)
from ops.bench.record import Figures, recorded
from ops.clusters import RegionServers, bootstrap_topics, two_regions
from ops.stack import ROOT, region_env, start_service, stop_all, until_ready
from regions.core.boards import Board, Consistency
from regions.intake.client import AwardClient
from regions.runtime.settings import Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.session import apply_migrations, connect

HOME = "eu"
ROUTED_METRICS = ("lb_intake_home_produce_requests_total", "lb_intake_home_routed_awards_total")


async def boards(us: Settings, tag: str) -> dict[Consistency, Board]:
    """One board of each consistency, both homed in eu, in the catalog."""
    await asyncio.to_thread(apply_migrations, us.cassandra)
    cluster, session = connect(us.cassandra)
    made = {c: Board(f"bench-{tag}-{c.value.lower()}", "Benchmark", HOME, consistency=c) for c in Consistency}
    try:
        for board in made.values():
            await CassandraCatalog(session).create(board)
    finally:
        cluster.shutdown()
    return made


async def routed_counts(port: int) -> dict[str, float]:
    """The intake's counters of awards routed to eu and the Produce requests that carried them."""
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    found = dict.fromkeys(ROUTED_METRICS, 0.0)
    for name in ROUTED_METRICS:
        match = re.search(rf'^{name}{{home="{HOME}"}} (\S+)$', text, re.MULTILINE)
        if match:
            found[name] = float(match.group(1))
    return found


async def warm_up(port: int, board: Board) -> None:
    """One award first: the intake resolves the board and, for HOME_ROUTED, starts its producer to eu."""
    client = AwardClient(f"http://127.0.0.1:{port}")
    try:
        award = {"leaderboardId": board.id, "matchId": uuid.uuid4().hex, "userId": "warm",
                 "awardType": "points", "delta": 1}  # fmt: skip
        response = await client.send(award)
        if response.status_code != 202:
            raise RuntimeError(f"warm-up award to {board.id} answered {response.status_code}: {response.text}")
    finally:
        await client.aclose()


async def load(args: argparse.Namespace, schedule: Schedule, results: Results) -> None:
    if not args.generators:
        await drive(schedule, results)
        return
    connections = max(1, args.connections // args.generators)
    schedule = dataclasses.replace(schedule, max_connections=connections)
    await collect(generator_processes(schedule, args.generators), args.batch, results)


@dataclasses.dataclass
class Measured:
    """One board's measured load, over every round: the answers and the Produce requests to eu."""

    board: Board
    results: Results = dataclasses.field(default_factory=Results)
    seconds: float = 0.0
    produces: float = 0.0
    routed: float = 0.0

    def add(self, results: Results, seconds: float, counts: tuple[float, float]) -> None:
        mine = self.results
        mine.ack_ms += results.ack_ms
        mine.send_delay_ms += results.send_delay_ms
        mine.accepted += results.accepted
        mine.offered += results.offered
        mine.late_sends += results.late_sends
        for status, n in results.rejected.items():
            mine.rejected[status] = mine.rejected.get(status, 0) + n
        self.seconds += seconds
        self.produces += counts[0]
        self.routed += counts[1]

    def figures(self) -> Figures:
        r = self.results
        requests = len(r.ack_ms) - sum(r.rejected.values())
        return r.figures(self.seconds) | {
            "home_produce_requests": self.produces, "routed_awards": self.routed, "accepted_requests": requests,
            "round_trips_per_request": self.produces / requests if requests else float("nan"),
            "round_trips_per_award": self.produces / r.accepted if r.accepted else float("nan"),
        }  # fmt: skip

    def report(self, label: str) -> None:
        r, f = self.results, self.figures()
        rejected = f"rejected {r.rejected}" if r.rejected else "none rejected"
        print(f"{label:<24} ack ms {shown(percentiles(r.ack_ms), '7.1f')}   "
              f"{r.accepted / self.seconds:6.0f} accepted/s, {rejected}, {r.late_sends} late sends "
              f"(> {LATE_S * 1000:.0f} ms)", flush=True)  # fmt: skip
        print(f"{'':<24} round trips to {HOME}'s cluster added: {self.produces:.0f} Produce requests for "
              f"{f['accepted_requests']} requests of {r.accepted} awards ({f['round_trips_per_request']:.2f} a "
              f"request, {f['round_trips_per_award']:.3f} an award; {self.routed:.0f} awards routed)", flush=True)  # fmt: skip


async def phase(args: argparse.Namespace, port: int, board: Board) -> Measured:
    """``--warmup`` s of unmeasured load to one board, then ``--duration`` s measured."""
    await warm_up(port, board)
    await load(args, Schedule.of(args, port, board.id, args.warmup), Results())
    before = await routed_counts(port)
    started = time.perf_counter()
    results = Results()
    await load(args, Schedule.of(args, port, board.id, args.duration), results)
    wall = time.perf_counter() - started
    after = await routed_counts(port)
    measured = Measured(board)
    measured.add(results, wall, (after[ROUTED_METRICS[0]] - before[ROUTED_METRICS[0]],
                                 after[ROUTED_METRICS[1]] - before[ROUTED_METRICS[1]]))  # fmt: skip
    return measured


async def measure(args: argparse.Namespace, us: Settings, logs: Path, made: dict[Consistency, Board]) -> Figures:
    """``--rounds`` rounds of one phase per board, the order alternating (a cluster that warms
    up during the run favours neither board); each round's figures and all rounds together."""
    env = {**os.environ, **region_env(us), "LB_INTAKE__RATE_PER_KEY": "1e9", "LB_INTAKE__BURST_PER_KEY": "1e9",
           "LB_INTAKE__HOME_DELIVERY_TIMEOUT_S": str(us.intake.home_delivery_timeout_s)}  # fmt: skip
    procs = {"intake": start_service("intake", env, logs)}
    total = {c: Measured(made[c]) for c in Consistency}
    rounds: list[Figures] = []
    try:
        await until_ready(us, procs, logs, 60)
        print(f"== {args.rounds} rounds of {args.duration:.0f} s per board at {args.rate} awards/s, {args.batch} "
              f"a request, to us's intake; both boards homed in {HOME}", flush=True)  # fmt: skip
        for n in range(args.rounds):
            order = list(Consistency) if n % 2 == 0 else list(reversed(Consistency))
            this: Figures = {}
            for c in order:
                measured = await phase(args, us.intake.port, made[c])
                measured.report(f"round {n + 1} {c}")
                total[c].add(measured.results, measured.seconds, (measured.produces, measured.routed))
                this[c.value] = measured.figures()
            rounds.append(this)
    finally:
        stop_all(procs.values())
    print(f"\n== all {args.rounds} rounds")
    for c in Consistency:
        total[c].report(str(c))
    return {"rounds": rounds, **{c.value: total[c].figures() for c in Consistency}}


async def main(args: argparse.Namespace) -> Figures:
    tag = uuid.uuid4().hex[:8]
    base = bench_settings(f"bench{tag}")
    logs = ROOT / ".data" / "logs" / f"bench-home-routed-{tag}"
    logs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-us-") as scratch:
        cluster = RegionServers(Path(scratch))
        print(f"== starting region us's Kafka cluster on 127.0.0.1:{cluster.port} ...", flush=True)
        await asyncio.to_thread(cluster.start)
        try:
            eu, us = two_regions(base, cluster.bootstrap_servers)
            await bootstrap_topics(eu, us)
            return await measure(args, us, logs, await boards(us, tag))
        finally:
            await asyncio.to_thread(cluster.stop)


def parse() -> argparse.Namespace:
    p = parser(__doc__)
    add_options(p, rate=1000, rate_help="awards a second to us's intake", connections=1000,
                connections_help="most HTTP connections open at once", players=10_000, duration=False)  # fmt: skip
    p.set_defaults(batch=1)
    p.add_argument("--duration", type=float, default=30, help="seconds of load per board (default 30)")
    p.add_argument(
        "--warmup", type=float, default=5, help="seconds of unmeasured load before each board's (default 5)"
    )
    p.add_argument("--rounds", type=int, default=2, help="rounds of both boards, in alternating order (default 2)")
    p.add_argument(
        "--generators", type=int, default=1, help="load generator processes (default 1; 0: this one)"
    )
    return p.parse_args()


if __name__ == "__main__":
    options = parse()
    recorded("home_routed", options, lambda: asyncio.run(main(options)))
