"""Replication benchmark between two real Kafka clusters on this machine.

Region ``us`` is a second Kafka cluster started for the run (stopped at the end); region ``eu`` is
the running one. One replicator process copies us's awards into eu. Two phases:

1. **steady**: awards (real msgpack AwardEvents) written to us at ``--rate`` per second for
   ``--duration`` s; a read_committed consumer of eu's ``awards.from-us`` measures, per record, the
   time from its acceptance in us (its timestamp) to its copy being visible in eu: the replication
   lag. Prints copied records/s, lag p50/p95/p99/max, the replicator's own record lag, and CPU per
   process (replicator, both brokers, this load generator).
2. **backlog**: the replicator is stopped, ``--backlog`` awards are written, and a restarted
   replicator drains them: the most records/s one replicator copies.

Run through ``ops/bench/replicate`` (it starts the servers). Options: ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition

from ops.bench.kit import CpuClock, distribution, parser, percentile, percentiles, shown
from ops.bench.record import Figures, recorded
from ops.clusters import RegionServers, ReplicatorProcess, bootstrap_topics, end_offsets, two_regions
from ops.stack import data_dir, server_pids
from regions.runtime.settings import Settings, load_settings
from regions.stores.kafka.clients import make_producer
from schema.event_id import event_id, payload_digest
from schema.records import AwardEvent, Codec
from schema.replication import replicated_awards_topic


def award_value(codec: Codec, i: int, tag: str) -> tuple[bytes, bytes]:
    board, user, match = "bench-board", f"p{i % 100_000}", f"{tag}-{i}"
    award = AwardEvent(
        event_id=event_id(board, match, user, "points"), digest=payload_digest(5, None), board_id=board,
        match_id=match, user_id=user, award_type="points", amount=5, occurred_at_ms=None, region="us",
        accepted_at_ms=int(time.time() * 1000), aggregation="SUM", sort_order="DESC", tie_policy="USER_ID",
    )  # fmt: skip
    return f"{board}|{user}".encode(), codec.encode(award)


async def produce(us: Settings, rate: float, seconds: float, tag: str) -> int:
    """Open-loop load: ``rate`` awards/s in ticks of 10 ms; returns how many were acknowledged."""
    codec, producer = Codec(), make_producer(us.kafka)
    await producer.start()
    sent, start = 0, time.perf_counter()
    pending = []
    try:
        while (now := time.perf_counter()) - start < seconds:
            due = int((now - start) * rate) - sent
            for _ in range(due):
                key, value = award_value(codec, sent, tag)
                pending.append(await producer.send(us.kafka.topic("awards"), value, key=key))
                sent += 1
            if len(pending) > 5000:
                await asyncio.gather(*pending)
                pending.clear()
            await asyncio.sleep(0.01)
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return sent


@dataclass
class Watch:
    lag_ms: list[float] = field(default_factory=list)
    seen: int = 0


async def watch(eu: Settings, result: Watch, stop: asyncio.Event) -> None:
    """Reads eu's copies of us's awards as they commit; lag = visible now - accepted in us."""
    topic = eu.kafka.topic(replicated_awards_topic("us"))
    consumer = AIOKafkaConsumer(
        bootstrap_servers=eu.kafka.bootstrap_servers,
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(eu.kafka.partitions)]
        consumer.assign(tps)
        await consumer.seek_to_end(*tps)
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=100, max_records=10_000)
            now_ms = time.time() * 1000
            for records in batch.values():
                result.lag_ms.extend(now_ms - r.timestamp for r in records)
                result.seen += len(records)
    finally:
        await consumer.stop()


def histogram_bounds(metrics: dict[str, float], name: str) -> dict[float, float]:
    """For p50, p95 and p99: the upper bound of the histogram bucket that holds the quantile."""
    buckets = sorted(
        (float(k.split('le="')[1].split('"')[0]), v)
        for k, v in metrics.items()
        if k.startswith(name + "_bucket{")
    )
    total = buckets[-1][1] if buckets else 0
    return {
        q: next((le for le, count in buckets if count >= q * total), float("nan")) for q in (0.5, 0.95, 0.99)
    }


async def sample_record_lag(replicator: ReplicatorProcess, samples: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        metrics = await replicator.metrics()
        samples.append(sum(v for k, v in metrics.items() if k.startswith("lb_replicator_lag_records{")))
        await asyncio.sleep(0.5)


async def until_caught_up(replicator: ReplicatorProcess, total: int) -> None:
    while True:
        metrics = await replicator.metrics()
        done = sum(v for k, v in metrics.items() if k.startswith("lb_replicator_checkpoint_offset{"))
        if done >= total:
            return
        await asyncio.sleep(0.05)


async def started(
    eu: Settings, logs: Path, name: str, pids: dict[str, int]
) -> tuple[ReplicatorProcess, dict[str, int]]:
    """A replicator copying us's awards into eu, ready, and ``pids`` with its own."""
    replicator = ReplicatorProcess(eu, "us", logs, name)
    await replicator.start()
    return replicator, {**pids, "replicator": replicator.pid}


def print_cpu(cores: dict[str, float]) -> None:
    print("  CPU (share of one core): " + "  ".join(f"{n} {share:.2f}" for n, share in cores.items()))


async def steady(
    args: argparse.Namespace, eu: Settings, us: Settings, pids: dict[str, int], logs: Path
) -> Figures:
    replicator, pids = await started(eu, logs, "", pids)
    result, stop, lag_samples = Watch(), asyncio.Event(), list[float]()
    watching = asyncio.create_task(watch(eu, result, stop))
    sampling = asyncio.create_task(sample_record_lag(replicator, lag_samples, stop))
    await asyncio.sleep(1)  # the watcher positioned at the end before the load starts
    clock, drained_by = CpuClock(pids), time.perf_counter() + args.duration + 60
    sent = await produce(us, args.rate, args.duration, uuid.uuid4().hex[:6])
    while result.seen < sent:  # every acknowledged award copied (or a minute after the load)
        if time.perf_counter() > drained_by:
            break
        await asyncio.sleep(0.05)
    use = clock.read()
    stop.set()
    await asyncio.gather(watching, sampling)
    committed = histogram_bounds(await replicator.metrics(), "lb_replicator_copy_latency_seconds")
    await replicator.stop()
    lag = result.lag_ms
    print(f"steady: {sent} awards offered at {args.rate:.0f}/s for {args.duration:.0f} s; "
          f"{result.seen} copied ({result.seen / use.wall:.0f} records/s over {use.wall:.1f} s)")  # fmt: skip
    print(f"  replication lag (accepted in us -> visible in eu) ms: {shown(percentiles(lag))}  "
          f"max {max(lag, default=float('nan')):.0f}")  # fmt: skip
    print("  accepted in us -> copy committed, the replicator's histogram (upper bounds) ms: "
          + "  ".join(f"p{q * 100:g} <= {committed[q] * 1000:.0f}" for q in committed))  # fmt: skip
    print(f"  replicator record lag (sampled every 0.5 s): p99 {percentile(lag_samples, 0.99):.0f}  "
          f"max {max(lag_samples, default=0):.0f}")  # fmt: skip
    print_cpu(use.cores())
    return {"offered": sent, "copied": result.seen, "seconds": use.wall, "copied_per_s": result.seen / use.wall,
            "lag_ms": distribution(lag), "committed_upper_bound_ms": {f"p{q * 100:g}": b * 1000 for q, b in committed.items()},
            "record_lag": distribution(lag_samples), "cpu_cores": use.cores()}  # fmt: skip


async def backlog(
    args: argparse.Namespace, eu: Settings, us: Settings, pids: dict[str, int], logs: Path
) -> Figures:
    codec, producer = Codec(), make_producer(us.kafka)
    await producer.start()
    try:
        futures = []
        for i in range(args.backlog):
            key, value = award_value(codec, i, "backlog")
            futures.append(await producer.send(us.kafka.topic("awards"), value, key=key))
        await asyncio.gather(*futures)
    finally:
        await producer.stop()
    end = sum((await end_offsets(us)).values())
    replicator, pids = await started(eu, logs, "-backlog", pids)
    clock = CpuClock(pids)
    await until_caught_up(replicator, end)
    use = clock.read()
    await replicator.stop()
    print(f"backlog: {args.backlog} awards drained by a restarted replicator in {use.wall:.1f} s: "
          f"{args.backlog / use.wall:.0f} records/s")  # fmt: skip
    print_cpu(use.cores())
    return {"awards": args.backlog, "seconds": use.wall, "records_per_s": args.backlog / use.wall,
            "cpu_cores": use.cores()}  # fmt: skip


async def main(args: argparse.Namespace) -> Figures:
    base = load_settings()
    local = base.model_copy(
        update={"kafka": base.kafka.model_copy(update={"topic_prefix": f"bench{uuid.uuid4().hex[:8]}"})}
    )
    with tempfile.TemporaryDirectory(prefix="bench-us-") as scratch:
        cluster = RegionServers(Path(scratch))
        print(f"starting region us's Kafka cluster on 127.0.0.1:{cluster.port} ...", flush=True)
        cluster.start()
        try:
            eu, us = two_regions(local, cluster.bootstrap_servers)
            await bootstrap_topics(eu, us)
            pids = {"kafka-eu": server_pids(data_dir())["kafka"], "kafka-us": server_pids(cluster.data_dir)["kafka"],
                    "load+watch": os.getpid()}  # fmt: skip
            return {"steady": await steady(args, eu, us, pids, Path(scratch)),
                    "backlog": await backlog(args, eu, us, pids, Path(scratch))}  # fmt: skip
        finally:
            cluster.stop()


def parse() -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument("--duration", type=float, default=30, help="seconds of steady load (default 30)")
    p.add_argument("--rate", type=float, default=1500, help="awards per second written in us (default 1500)")
    p.add_argument(
        "--backlog", type=int, default=100_000, help="awards drained in the backlog phase (default 100000)"
    )
    return p.parse_args()


if __name__ == "__main__":
    options = parse()
    recorded("replicate", options, lambda: asyncio.run(main(options)))
