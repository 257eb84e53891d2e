"""Restore benchmark: how fast a processor takes a partition over, with a warm state store and a cold one.

Fills fresh changelogs of one partition the way a processor writes them: one total per player in the
totals topic, and a few remembered event ids per player in the dedupe topic. Then, as a processor
taking the partition over does, restores the partition's RocksDB store:
- cold: no local store (a new host): every changelog record is read and written to the store;
- warm: the store of an earlier owner on this host, behind by ``--tail`` records written since.
A plain read of the same records without decoding is the reference. Prints seconds, records/s,
CPU seconds (this process's, RocksDB's threads included), process RSS (bounded by the store's cache,
whatever the number of players) and disk per player.

Run through ``ops/bench/restore`` (it starts the servers). Options: ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from aiokafka import ConsumerRecord, TopicPartition

from ops.bench.kit import parser, rss_mib
from ops.bench.record import Figures, recorded
from ops.stack import delete_topics
from regions.processor.loop import Processor
from regions.processor.restore import restore
from regions.runtime.health import Health
from regions.runtime.settings import Settings, load_settings
from regions.stores.kafka.clients import make_producer, replay
from regions.stores.kafka.topics import ensure_topics
from regions.stores.rocksdb import RocksStore
from schema.event_id import event_id, payload_digest
from schema.records import Codec, PlayerTotal, dedupe_key, pack_seen, totals_key


async def fill(settings: Settings, players: int, recent: int, first: int = 0) -> None:
    """Players ``first`` .. ``first + players - 1``: a total each and ``recent`` remembered event ids."""
    codec, kafka = Codec(), settings.kafka
    totals, dedupe = kafka.topic("totals"), kafka.topic("dedupe")
    now_ms = int(time.time() * 1000)
    producer = make_producer(kafka)
    await producer.start()
    try:
        pending = []
        for i in range(first, first + players):
            user = f"player-{i:09d}"
            ids = [event_id("bench", f"m{i}-{j}", user, "kill") for j in range(recent)]
            total = PlayerTotal(
                board_id="bench", user_id=user, total=i, version=max(1, recent), reached=f"{i:027x}",
                sort_order="DESC", tie_policy="USER_ID", source_partition=0, source_offset=i,
                event_id=ids[-1] if ids else "", source_region=settings.region,
            )  # fmt: skip
            pending.append(
                await producer.send(totals, codec.encode(total), key=totals_key("bench", user), partition=0)
            )
            for j, e in enumerate(ids):
                value = pack_seen(payload_digest(j, None), now_ms)
                pending.append(await producer.send(dedupe, value, key=dedupe_key(e), partition=0))
            if len(pending) >= 50_000:
                await asyncio.gather(*pending)
                pending.clear()
                print(f"\r   written {i + 1 - first:,} of {players:,} players", end="", flush=True)
        await asyncio.gather(*pending)
        print(f"\r   written {players:,} of {players:,} players")
    finally:
        await producer.stop()


async def plain_read(settings: Settings) -> tuple[float, int, float]:
    """Seconds to read both changelog partitions without decoding (the reference), records read, and
    the CPU seconds this process spent on it."""
    tps = [TopicPartition(settings.kafka.topic(t), 0) for t in ("totals", "dedupe")]
    count = 0

    async def handle(records: list[ConsumerRecord]) -> None:
        nonlocal count
        count += len(records)

    started, cpu = time.perf_counter(), time.process_time()
    await replay(settings.kafka, tps, handle)
    return time.perf_counter() - started, count, time.process_time() - cpu


async def takeover(
    processor: Processor, settings: Settings, store_path: Path
) -> tuple[str, int, float, float]:
    """Open the store at ``store_path`` and restore it, as a processor taking partition 0 over does;
    mode, records, seconds and CPU seconds of this process (RocksDB's threads included)."""
    started, cpu = time.perf_counter(), time.process_time()
    store = RocksStore(store_path, processor._store_options)
    try:
        done = await restore(
            settings.kafka, store, processor.identity(0), retention_ms=settings.processor.dedupe_retention_ms
        )
    finally:
        store.close()
    return done.mode, done.records, time.perf_counter() - started, time.process_time() - cpu


def disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


async def main(args: argparse.Namespace) -> Figures:
    base = load_settings()
    tag = uuid.uuid4().hex[:8]
    settings = base.model_copy(update={
        "kafka": base.kafka.model_copy(update={"topic_prefix": f"benchr{tag}", "partitions": 1}),
        "processor": base.processor.model_copy(update={"store_cache_mib": args.cache_mib}),
    })  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="restore-bench-", dir=args.dir))
    print(f"== setup: {args.players:,} players in one partition, {args.recent} remembered event ids each, "
          f"store cache {args.cache_mib} MiB, stores under {work}")  # fmt: skip
    await ensure_topics(settings.kafka)
    try:
        await fill(settings, args.players, args.recent)
        processor = Processor(settings, Health("processor"))
        await processor.prepare()
        plain, cold, warm, records, cpu_plain, cpu_cold = [], [], [], 0, [], []
        for run in range(args.runs):
            seconds, records, cpu = await plain_read(settings)
            plain.append(seconds)
            cpu_plain.append(cpu)
            store = work / f"cold-{run}"
            mode, read, seconds, cpu = await takeover(processor, settings, store)
            cpu_cold.append(cpu)
            if (mode, read) != ("full", records):
                raise SystemExit(
                    f"cold takeover: {mode} restore of {read:,} records, expected full of {records:,}"
                )
            cold.append(seconds)
            print(f"   run {run + 1}: plain read {plain[-1]:.2f} s, cold takeover {seconds:.2f} s, "
                  f"RSS {rss_mib():,.0f} MiB, store {disk_bytes(store) / 2**20:,.0f} MiB", flush=True)  # fmt: skip
        await fill(settings, args.tail, args.recent, first=args.players)  # written by another owner meanwhile
        tail = args.tail * (1 + args.recent)
        for run in range(args.runs):
            mode, read, seconds, _ = await takeover(processor, settings, work / f"cold-{run}")
            if (mode, read) != ("tail", tail):
                raise SystemExit(
                    f"warm takeover: {mode} restore of {read:,} records, expected a tail of {tail:,}"
                )
            warm.append(seconds)
        disk = disk_bytes(work / "cold-0")
        p, c, w = statistics.median(plain), statistics.median(cold), statistics.median(warm)
        print(f"\n== takeover of one partition: {args.players:,} players, {records:,} changelog records "
              f"(median of {args.runs})")  # fmt: skip
        print(f"plain read (reference)     {records / p:12,.0f} records/s  ({p:.2f} s)")
        print(
            f"cold: full restore         {records / c:12,.0f} records/s  ({c:.2f} s, {p / c:.2f}x the plain read)"
        )
        cp, cc = statistics.median(cpu_plain), statistics.median(cpu_cold)
        print(f"CPU of this process        plain read {cp:.2f} s, cold restore {cc:.2f} s ({cp / cc:.2f}x; on a "
              "shared machine the wall-clock ratio follows the CPU others leave, this one does not)")  # fmt: skip
        print(f"warm: tail of {tail:,} records {w:12.2f} s")
        print(
            f"store on disk              {disk / 2**20:12,.0f} MiB  ({disk / args.players:,.0f} bytes per player)"
        )
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS of this process   {peak:12,.0f} MiB (store cache {args.cache_mib} MiB)")
        return {"records": records, "plain_read": {"seconds": p, "records_per_s": records / p, "cpu_s": cp},
                "cold": {"seconds": c, "records_per_s": records / c, "cpu_s": cc, "of_plain_read": p / c},
                "warm": {"seconds": w, "tail_records": tail}, "store_bytes": disk,
                "store_bytes_per_player": disk / args.players, "peak_rss_mib": peak,
                "runs": {"plain_s": plain, "cold_s": cold, "warm_s": warm}}  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
        await delete_topics(settings.kafka, f"{settings.kafka.topic_prefix}.")


def parse() -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument(
        "--players", type=int, default=1_000_000, help="players in the partition (default 1000000)"
    )
    p.add_argument("--recent", type=int, default=4, help="remembered event ids per player (default 4)")
    p.add_argument(
        "--tail", type=int, default=1000, help="players written after the warm store (default 1000)"
    )
    p.add_argument("--cache-mib", type=int, default=256, help="store block cache (default 256)")
    p.add_argument("--runs", type=int, default=1, help="repetitions; medians are printed (default 1)")
    p.add_argument("--dir", default=None, help="where the stores go (default: the temp directory)")
    return p.parse_args()


if __name__ == "__main__":
    options = parse()
    recorded("restore", options, lambda: asyncio.run(main(options)))
