"""Waiting for the projection: the intake's acknowledgement latency with and without
``?wait=applied`` at the same offered rate (default 1,000 single-award requests a second), one region
with its processor, projector, audit sink and intake running.

Each phase is the open-loop load of ``load.py`` (signed requests sent at their scheduled times,
latency counted from them) to one board, the plain phase first, then the waiting one, each after a
pause that lets the one before drain. Prints ack p50/p95/p99 of both, their ratio, and how many
awaited answers carried ``applied`` (the others timed out: ``applied: null``).

Run through ``ops/bench/applied`` (it starts the servers of ``ops/services env``). Options: ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid

from ops.bench.kit import QUANTILES, parser, percentile, percentiles, shown
from ops.bench.load import (
    LATE_S,
    Results,
    Schedule,
    bench_board,
    bench_settings,
    collect,
    drive,
    generator_processes,
)
from ops.bench.record import Figures, recorded
from ops.stack import ROOT, SERVICES, region_env, start_service, stop_all, until_ready
from regions.core.waits import MAX_TIMEOUT_MS


async def phase(args: argparse.Namespace, port: int, board: str, query: str) -> tuple[Results, float]:
    """One phase of load; its results and how long it took (until the last answer)."""
    started = time.perf_counter()
    schedule = Schedule(port, board, args.rate, 1, args.duration, args.players,
                        max(1, args.connections // max(1, args.generators)), query=query)  # fmt: skip
    results = Results()
    if args.generators:
        await collect(generator_processes(schedule, args.generators), 1, results)
    else:
        await drive(schedule, results)
    return results, time.perf_counter() - started


def line(label: str, measured: tuple[Results, float]) -> str:
    r, wall = measured
    late = f"late sends {r.late_sends} (> {LATE_S * 1000:.0f} ms)"
    rejected = f"rejected {r.rejected}" if r.rejected else "none rejected"
    return (f"{label:<22}{shown(percentiles(r.ack_ms), '8.1f')}   {r.accepted / wall:6.0f} accepted/s over {wall:.0f} s, "
            f"{rejected}, {late}")  # fmt: skip


async def main(args: argparse.Namespace) -> Figures:
    tag = uuid.uuid4().hex[:8]
    settings = bench_settings(f"bench{tag}")
    print(f"== setup: topics {settings.kafka.topic_prefix}.*, {args.duration:.0f} s per phase at {args.rate}/s, "
          f"one award per request, wait=applied&timeoutMs={args.timeout_ms}")  # fmt: skip
    board = await bench_board(settings, tag)
    logs = ROOT / ".data" / "logs" / f"bench-{tag}"
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **region_env(settings)}
    procs = {s: start_service(s, env, logs) for s in SERVICES}
    try:
        await until_ready(settings, procs, logs, args.warmup * 10)
        phases = {}
        for label, query in [("plain", ""), ("wait=applied", f"wait=applied&timeoutMs={args.timeout_ms}")]:
            await asyncio.sleep(args.warmup)
            print(f"== {label}: load running ...", flush=True)
            phases[label] = await phase(args, settings.intake.port, board.id, query)
    finally:
        stop_all(procs.values())
    report(args, phases["plain"], phases["wait=applied"])
    return {label.replace("=", "_"): results.figures(wall) for label, (results, wall) in phases.items()}


def report(
    args: argparse.Namespace, plain_phase: tuple[Results, float], waited_phase: tuple[Results, float]
) -> None:
    plain, waited = plain_phase[0], waited_phase[0]
    print(f"\n== ack latency ms ({args.duration:.0f} s each, {args.rate}/s offered, open loop)")
    print(line("plain", plain_phase))
    print(line("wait=applied", waited_phase))
    ratios = "  ".join(
        f"p{round(q * 100)} {percentile(waited.ack_ms, q) / percentile(plain.ack_ms, q):6.2f}x"
        for q in QUANTILES
    )
    print(f"{'ratio (wait / plain)':<22}{ratios}")
    print(f"applied in the answer  {waited.applied} of {waited.accepted} awaited awards "
          f"({waited.accepted - waited.applied} timed out: applied null)")  # fmt: skip


def parse() -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument("--duration", type=float, default=30, help="seconds of load per phase (default 30)")
    p.add_argument("--rate", type=int, default=1000, help="requests (one award each) a second (default 1000)")
    p.add_argument("--players", type=int, default=10_000, help="distinct players (default 10000)")
    p.add_argument(
        "--connections", type=int, default=1000, help="most HTTP connections open at once (default 1000)"
    )
    p.add_argument(
        "--generators", type=int, default=1, help="load generator processes (default 1; 0: this one)"
    )
    p.add_argument(
        "--timeout-ms", type=int, default=MAX_TIMEOUT_MS, help="timeoutMs of the waits (default 2000)"
    )
    p.add_argument("--warmup", type=float, default=5, help="seconds to settle before each phase (default 5)")
    return p.parse_args()


if __name__ == "__main__":
    options = parse()
    recorded("applied", options, lambda: asyncio.run(main(options)))
