"""Restore benchmark: how fast a processor takes partitions over, state and dedupe memory included.

Fills a fresh totals topic (the processor's compacted changelog) with one record per player, each
carrying a few recent event ids as the dedupe memory does, then restores every partition the way a
processor does when it starts or is assigned partitions: all partitions at once, each decoded into
per-player state. In the same run, a plain read of the same records without decoding is the
reference. Prints records/s, the ratio, and the memory the restored state takes.

Run through ``ops/bench/restore`` (it starts the servers). Options: ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import time
import uuid

from aiokafka import ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from regions.health import Health
from regions.kafka_clients import ensure_topics, make_producer, replay
from regions.processor.loop import Processor
from regions.settings import Settings, load_settings
from schema.event_id import event_id, payload_digest
from schema.records import Codec, PlayerTotal, pack_seen, totals_key


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


async def fill(settings: Settings, players: int, recent: int) -> None:
    """One total per player, spread over the partitions like the processor's own writes."""
    codec, topic, partitions = Codec(), settings.kafka.topic("totals"), settings.kafka.partitions
    producer = make_producer(settings.kafka)
    await producer.start()
    try:
        pending = []
        for i in range(players):
            user = f"player-{i:08d}"
            ids = [event_id("bench", f"m{i}-{j}", user, "kill") for j in range(recent)]
            seen = b"".join(
                pack_seen(e, payload_digest(j, None), 1_700_000_000_000) for j, e in enumerate(ids)
            )
            total = PlayerTotal(
                board_id="bench", user_id=user, total=i, version=recent, reached=f"{i:027x}", recent=seen,
                sort_order="DESC", tie_policy="USER_ID", source_partition=i % partitions, source_offset=i,
                event_id=ids[-1] if ids else "",
            )  # fmt: skip
            pending.append(
                await producer.send(
                    topic, codec.encode(total), key=totals_key("bench", user), partition=i % partitions
                )
            )
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending.clear()
                print(f"\r   written {i + 1:,} of {players:,}", end="", flush=True)
        await asyncio.gather(*pending)
        print(f"\r   written {players:,} of {players:,}")
    finally:
        await producer.stop()


async def plain_read(settings: Settings) -> float:
    """Seconds to read every record of the topic without decoding: the reference."""
    tps = [TopicPartition(settings.kafka.topic("totals"), p) for p in range(settings.kafka.partitions)]
    count = 0

    async def handle(records: list[ConsumerRecord]) -> None:
        nonlocal count
        count += len(records)

    started = time.perf_counter()
    await asyncio.gather(*(replay(settings.kafka, [tp], handle) for tp in tps))
    return time.perf_counter() - started


async def restore_all(settings: Settings) -> tuple[float, int, float]:
    """Seconds to restore every partition at once, players restored, and the state's RSS growth."""
    processor = Processor(settings, Health("processor"))
    gc.collect()
    before = rss_mib()
    started = time.perf_counter()
    states = await asyncio.gather(*(processor.restore(p) for p in range(settings.kafka.partitions)))
    elapsed = time.perf_counter() - started
    gc.collect()
    grown = rss_mib() - before
    players = sum(len(s) for s in states)
    del states
    return elapsed, players, grown


async def main(args: argparse.Namespace) -> None:
    base = load_settings()
    tag = uuid.uuid4().hex[:8]
    settings = base.model_copy(
        update={"kafka": base.kafka.model_copy(update={"topic_prefix": f"benchr{tag}"})}
    )
    print(f"== setup: {args.players:,} players, {args.recent} recent event ids each, "
          f"{settings.kafka.partitions} partitions (topics {settings.kafka.topic_prefix}.*)")  # fmt: skip
    await ensure_topics(settings.kafka)
    try:
        await fill(settings, args.players, args.recent)
        plain, restore, grown = [], [], []
        for run in range(args.runs):
            plain.append(await plain_read(settings))
            seconds, players, mib = await restore_all(settings)
            if players != args.players:
                raise SystemExit(f"restored {players:,} players, expected {args.players:,}")
            restore.append(seconds)
            grown.append(mib)
            print(f"   run {run + 1}: plain read {plain[-1]:.2f} s, restore {seconds:.2f} s")
        p, r = statistics.median(plain), statistics.median(restore)
        print(f"\n== restore (median of {args.runs})")
        print(f"plain read (reference)   {args.players / p:12,.0f} records/s  ({p:.2f} s)")
        print(f"processor restore        {args.players / r:12,.0f} records/s  ({r:.2f} s)")
        print(f"ratio                    {p / r:12.2f}x  (restore rate / plain read rate)")
        print(f"state in memory          {statistics.median(grown):12,.0f} MiB  "
              f"({statistics.median(grown) * 2**20 / args.players:,.0f} bytes per player)")  # fmt: skip
        print(
            f"peak RSS of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:12,.0f} MiB"
        )
    finally:
        admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka.bootstrap_servers)
        await admin.start()
        try:
            await admin.delete_topics(
                [settings.kafka.topic(t) for t in ("awards", "totals", "applied", "reconciliation")]
            )
        finally:
            await admin.close()


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--players", type=int, default=1_000_000, help="players in the changelog (default 1000000)"
    )
    p.add_argument("--recent", type=int, default=4, help="recent event ids per player (default 4)")
    p.add_argument("--runs", type=int, default=3, help="repetitions; medians are printed (default 3)")
    return p.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse()))
