"""Graceful overload: the intake offered twice the rate that meets its targets.

One region's intake (its own topics) is offered ``--rate`` R single-award requests a second, then
2R, open loop from ``--generators`` processes with up to ``--connections`` connections
(``load.py``: every request leaves at its scheduled time, late sends counted, the generators' CPU
reported apart). For each phase it prints awards accepted and refused (503 overloaded) a second,
ack p50/p95/p99 of the accepted (from the scheduled time), the refusals' latency p50/p99, and the
goodput at 2R as a share of R. Afterwards it reads the awards topic from the beginning and checks
that every accepted award is there, at the position its 202 named, and that nothing else is (no
refused award was written).

The contract: at 2R, accepted awards keep ack p99 < 200 ms and goodput >= 90 % of R; refusals are
answered within 50 ms. R is taken from ``--rate`` (a rate this machine meets the ack target at;
``ops/bench/pipeline`` finds one). Run through ``ops/bench/overload`` (it starts the servers of
``ops/services env``). Options: ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import time
import uuid

import msgspec
from aiokafka import TopicPartition

from ops.bench.kit import CpuClock, distribution, parser
from ops.bench.load import GeneratorReport, Reply, Schedule, bench_board, bench_settings, generator_processes
from ops.bench.record import Figures, recorded
from ops.stack import ROOT, region_env, start_service, stop_all, until_ready
from regions.runtime.settings import IntakeSettings, Settings
from regions.stores.kafka.clients import make_consumer
from schema.records import AwardEvent

ACK_P99_MS, REFUSAL_MS, GOODPUT = 200.0, 50.0, 0.90


async def replies_of(generators: list[subprocess.Popen[bytes]]) -> tuple[list[Reply], float, int, int]:
    """Every generator's replies, their CPU seconds, late sends and most connections, added up."""
    replies: list[Reply] = []
    cpu_s, connections, waited = 0.0, 0, 0
    for generator in generators:
        out, _ = await asyncio.to_thread(generator.communicate)
        if generator.returncode != 0:
            raise RuntimeError(f"a load generator exited with {generator.returncode}; see its output above")
        report = msgspec.msgpack.decode(out, type=GeneratorReport)
        replies += report.replies
        cpu_s += report.cpu_s
        connections += report.offered.connections
        waited += report.offered.waited_for_connection
    return replies, cpu_s, connections, waited


async def phase(
    args: argparse.Namespace, settings: Settings, board: str, rate: int, intake_pid: int
) -> Figures:
    schedule = Schedule(settings.intake.port, board, rate, 1, args.duration, args.players,
                        max(1, args.connections // args.generators), start_at=time.time() + 1.0)  # fmt: skip
    generators = generator_processes(schedule, args.generators)
    await asyncio.sleep(max(0.0, schedule.start_at - time.time()))
    clock = CpuClock({"intake": intake_pid})
    replies, generator_cpu_s, connections, waited = await replies_of(generators)
    used = clock.read()
    accepted = [r for r in replies if r.status == 202]
    refused = [r for r in replies if r.status == 503]
    others: dict[int, int] = {}
    for r in replies:
        if r.status not in (202, 503):
            others[r.status] = others.get(r.status, 0) + 1
    late = sum(r.sent - r.scheduled > 0.005 for r in replies)
    return {
        "offered_per_s": len(replies) / args.duration,
        "accepted": len(accepted),
        "accepted_per_s": len(accepted) / args.duration,
        "refused_per_s": len(refused) / args.duration,
        "other_statuses": others,
        "late_sends": late,
        "waited_for_connection": waited,
        "connections": connections,
        "ack_ms": distribution((r.done - r.scheduled) * 1000 for r in accepted),
        "refusal_ms": distribution((r.done - r.scheduled) * 1000 for r in refused),
        "refusal_from_send_ms": distribution((r.done - r.sent) * 1000 for r in refused),
        "intake_cpu_percent": used.seconds["intake"] / used.wall * 100,
        "generator_cpu_percent": generator_cpu_s / used.wall * 100,
        "positions": sorted((r.partition, r.offset) for r in accepted),
    }


async def topic_awards(settings: Settings) -> set[tuple[int, int]]:
    """(partition, offset) of every award in the awards topic (heartbeats left out)."""
    consumer = make_consumer(settings.kafka, group_id=None)
    await consumer.start()
    try:
        tps = [TopicPartition(settings.kafka.topic("awards"), p) for p in range(settings.kafka.partitions)]
        consumer.assign(tps)
        ends = await consumer.end_offsets(tps)
        await consumer.seek_to_beginning(*tps)
        found: set[tuple[int, int]] = set()
        while [tp for tp, end in ends.items() if await consumer.position(tp) < end]:
            for tp, records in (await consumer.getmany(timeout_ms=1000, max_records=10_000)).items():
                for r in records:
                    if r.key != b"\x00hb":
                        msgspec.msgpack.decode(r.value, type=AwardEvent)  # an award, whole
                        found.add((tp.partition, r.offset))
        return found
    finally:
        await consumer.stop()


def show(label: str, f: Figures) -> None:
    ack, refusal = f["ack_ms"], f["refusal_ms"]
    print(f"{label}: offered {f['offered_per_s']:,.0f}/s  accepted {f['accepted_per_s']:,.0f}/s  "
          f"refused {f['refused_per_s']:,.0f}/s  other {f['other_statuses'] or '-'}  late sends {f['late_sends']}  "
          f"connections {f['connections']}", flush=True)  # fmt: skip
    print(f"   ack of accepted ms p50/p95/p99 {ack['p50']:.1f} / {ack['p95']:.1f} / {ack['p99']:.1f}   "
          f"refusal ms p50/p99 {refusal['p50']:.1f} / {refusal['p99']:.1f}   "
          f"CPU intake {f['intake_cpu_percent']:.0f} %  generators {f['generator_cpu_percent']:.0f} %", flush=True)  # fmt: skip


async def main(args: argparse.Namespace) -> Figures:
    tag = uuid.uuid4().hex[:8]
    settings = bench_settings(f"bench{tag}")
    board = await bench_board(settings, tag)
    logs = ROOT / ".data" / "logs" / f"bench-{tag}"
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **region_env(settings),
           "LB_INTAKE__MAX_IN_FLIGHT_AWARDS": str(args.max_in_flight)}  # fmt: skip
    intake = start_service("intake", env, logs)
    try:
        await until_ready(settings, {"intake": intake}, logs, 120)
        await asyncio.sleep(args.warmup)
        phases = {}
        for label, rate in (("R", args.rate), ("2R", 2 * args.rate)):
            print(f"== {label} = {rate:,} single-award requests/s for {args.duration:.0f} s ...", flush=True)
            phases[label] = await phase(args, settings, board.id, rate, intake.pid)
            show(label, phases[label])
            await asyncio.sleep(args.warmup)
    finally:
        stop_all([intake])
    written = await topic_awards(settings)
    accepted = [p for f in phases.values() for p in f.pop("positions")]
    missing, extra = len(set(accepted) - written), len(written - set(accepted))
    over = phases["2R"]
    goodput = over["accepted_per_s"] / args.rate
    checks = {
        "ack_p99_under_200_ms": over["ack_ms"]["p99"] < ACK_P99_MS,
        "goodput_at_least_90_percent": goodput >= GOODPUT,
        "refusal_p99_under_50_ms": over["refused_per_s"] == 0 or over["refusal_ms"]["p99"] < REFUSAL_MS,
        "every_accepted_award_in_topic": missing == 0,
        "nothing_refused_in_topic": extra == 0,
    }
    print(f"== goodput at 2R: {goodput:.0%} of R; in the topic: {len(written)} awards, {missing} accepted missing, "
          f"{extra} not accepted; checks: {', '.join(f'{k} {v}' for k, v in checks.items())}")  # fmt: skip
    return {"rate": args.rate, "max_in_flight_awards": args.max_in_flight, "phases": phases,
            "goodput_share": goodput, "topic_awards": len(written), "missing": missing, "extra": extra,
            "checks": checks}  # fmt: skip


def parse() -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument("--rate", type=int, default=1500, help="R: single-award requests/s that meet the targets")
    p.add_argument("--duration", type=float, default=20, help="seconds of each phase (default 20)")
    p.add_argument(
        "--connections", type=int, default=2000, help="most connections open at once (default 2000)"
    )
    p.add_argument("--generators", type=int, default=2, help="load generator processes (default 2)")
    p.add_argument("--players", type=int, default=100_000, help="distinct players (default 100000)")
    p.add_argument(
        "--max-in-flight",
        type=int,
        default=IntakeSettings().max_in_flight_awards,
        help="LB_INTAKE__MAX_IN_FLIGHT_AWARDS of the run (default %(default)s)",
    )
    p.add_argument("--warmup", type=float, default=3, help="seconds of quiet before each phase (default 3)")
    return p.parse_args()


if __name__ == "__main__":
    options = parse()
    recorded("overload", options, lambda: asyncio.run(main(options)))
