"""Approximate (trending) boards: memory fixed as items grow, next to an exact board of the same stream.

Streams N awards (delta 1) over M distinct items, Zipf s (fixed seed), through the processor's pure
core (``regions.core.sketch``, ``regions.core.candidates``) and the real RocksDB store, in process:
the items spread over the partitions as the intake's key partitioner puts ``board|item``, each
partition with its own store, sketch and 2k candidates, rounds of ``--round`` awards per store
write, as the processor's rounds do. Not through Kafka: the whole pipeline for 10M awards would take
an hour here; the dedupe memory (the same for both boards) is left out.

Prints and records: the approximate state on disk (sketch blocks and candidate lists of every
partition) against an exact board's (a player state per item) for the same stream; Redis bytes of
the candidates' projection (written through the projection's own script into a scratch key space
of the shared Redis) against an exact projection, estimated from two samples of the exact board
written there (its growth between them continued to M items); recall of the true top k; the
largest estimate error of the top k against the bound epsilon x total; and how many of the top k
have a verified exact count (each checked against the true count).

    ops/bench/approximate [--awards 1000000 --items 100000 --k 100 --epsilon 0.001 --delta 0.001]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from ops.bench.kit import parser
from ops.bench.record import recorded
from regions.core.aggregation import PlayerState
from regions.core.boards import SortOrder, TiePolicy
from regions.core.candidates import CandidateList, Candidates, exact_note, ranked
from regions.core.ordering import encode
from regions.core.sketch import Shape, Sketch, error_bound
from regions.runtime.settings import Settings
from regions.stores.kafka.partitioner import murmur2
from regions.stores.redis.projection import ProjectedTotal, RedisProjection, connect_redis
from regions.stores.rocksdb import RocksStore, store_options
from regions.stores.task_state import StoreBatch
from schema.records import totals_key
from schema.scoped import counts_board_id, partition_member

BOARD = "trending"


def stream(args: argparse.Namespace) -> tuple[list[str], np.ndarray]:
    """(item ids, the item index of each award): Zipf(s) over the items, ids shuffled so that an
    item's id says nothing of its popularity."""
    rng = np.random.default_rng(args.seed)
    weights = 1.0 / np.arange(1, args.items + 1) ** args.zipf
    plays = rng.choice(args.items, size=args.awards, p=weights / weights.sum())
    ids = [f"item-{n:07d}" for n in rng.permutation(args.items)]
    return ids, plays


def fold_approximate(
    args: argparse.Namespace, ids: list[str], plays: np.ndarray, work: Path
) -> dict[str, Any]:
    """Every partition's rounds through the core and its store; returns the stores' figures."""
    shape, capacity = Shape.of(args.epsilon, args.delta), 2 * args.k
    part = [(murmur2(totals_key(BOARD, i)) & 0x7FFFFFFF) % args.partitions for i in ids]
    stores = [RocksStore(work / f"approx-p{p}", store_options(64, 16)) for p in range(args.partitions)]
    started = time.perf_counter()
    for start in range(0, len(plays), args.round):
        by_partition: dict[int, list[str]] = {}
        for n in plays[start : start + args.round].tolist():
            by_partition.setdefault(part[n], []).append(ids[n])
        for p, items in by_partition.items():
            _round(stores[p], shape, capacity, items)
    seconds = time.perf_counter() - started
    for store in stores:
        store.flush()
    lists = [store.candidates(BOARD) for store in stores]
    disk = sum(store.disk_bytes() for store in stores)
    for store in stores:
        store.close()
    return {"lists": lists, "disk": disk, "seconds": seconds, "part": part}


def _round(store: RocksStore, shape: Shape, capacity: int, items: list[str]) -> None:
    """One processor round of one partition: count, offer, then refresh and store the list."""
    sketch = Sketch(shape, lambda key: store.sketch_block((BOARD, *key)))
    listed = store.candidates(BOARD)
    candidates = Candidates.of(listed, capacity)
    for item in items:
        candidates.offer(item, sketch.add(item, 1), 1)
    after = candidates.listed(listed.version + 1, listed.total + len(items), sketch.estimate)
    blocks = {(BOARD, row, block): c for (row, block), c in sketch.changed_blocks().items()}
    store.write(StoreBatch(sketch=blocks, candidates={BOARD: after}))


def exact_store_bytes(ids: list[str], counts: np.ndarray, work: Path) -> int:
    """An exact board's processor state for the same stream: one player state per item."""
    store = RocksStore(work / "exact", store_options(64, 16))
    nonzero = np.nonzero(counts)[0].tolist()
    for start in range(0, len(nonzero), 100_000):
        players = {
            (BOARD, ids[n]): PlayerState(int(counts[n]), int(counts[n]), "")
            for n in nonzero[start : start + 100_000]
        }
        store.write(StoreBatch(players=players), bulk=True)
    store.flush()
    disk = store.disk_bytes()
    store.close()
    return disk


def _projected(user: str, total: int, version: int, exact: int | None = None) -> ProjectedTotal:
    """An entry as the projector writes it (a verified candidate with its count beside it)."""
    score, member = encode(SortOrder.DESC, TiePolicy.USER_ID, user, total, "")
    return ProjectedTotal(user, version, total, score, member, exact_note(exact))


async def redis_bytes(settings: Settings, lists: list[CandidateList], ids: list[str], counts: np.ndarray,
                      sample: int) -> tuple[int, int, int]:  # fmt: skip
    """(approximate projection bytes, exact projection bytes at the sample, estimated at every item)."""
    redis = connect_redis(settings.redis)
    prefix = f"{settings.redis.key_prefix}bench-approx-{uuid.uuid4().hex[:8]}:"
    projection = RedisProjection(redis, prefix)
    try:
        for p, listed in enumerate(lists):
            shown = listed.shown().items()
            await projection.apply(BOARD, [_projected(i, e, listed.version, exact) for i, (e, exact) in shown])
            await projection.apply(
                counts_board_id(BOARD), [_projected(partition_member(p), listed.total, listed.version)]
            )
        approximate = await _bytes(redis, prefix)
        exact_prefix = prefix + "exact:"
        exact = RedisProjection(redis, exact_prefix)
        order = np.argsort(-counts, kind="stable")[: min(sample, len(ids))].tolist()
        measured = []
        for start in range(0, len(order), 1000):
            await exact.apply(
                "exact", [_projected(ids[n], int(counts[n]), 1) for n in order[start : start + 1000]]
            )
            if start + 1000 in (len(order) // 2, len(order)) or start + 1000 >= len(order):
                measured.append((min(start + 1000, len(order)), await _bytes(redis, exact_prefix)))
        (n1, b1), (n2, b2) = measured[0], measured[-1]
        slope = (b2 - b1) / max(1, n2 - n1)
        return approximate, b2, int(b2 + slope * (int(np.count_nonzero(counts)) - n2))
    finally:
        async for key in redis.scan_iter(match=prefix + "*", count=1000):
            await redis.delete(key)
        await redis.aclose()


async def _bytes(redis: Any, prefix: str) -> int:
    total = 0
    async for key in redis.scan_iter(match=prefix + "*", count=1000):
        total += int(await redis.memory_usage(key, samples=0) or 0)
    return total


def quality(args: argparse.Namespace, lists: list[CandidateList], ids: list[str], counts: np.ndarray,
            part: list[int]) -> dict[str, Any]:  # fmt: skip
    """Recall of the true top k and the estimate errors against their bounds."""
    merged = ranked({i: e for listed in lists for i, e in listed.items}, args.k)
    index = {item: n for n, item in enumerate(ids)}
    order = sorted(range(len(ids)), key=lambda n: (-counts[n], ids[n]))[: args.k]
    true_top = {ids[n] for n in order}
    errors = [e - int(counts[index[i]]) for i, e in merged]
    partition_bounds = [error_bound(args.epsilon, lists[part[index[i]]].total) for i, _ in merged]
    shown = {i: exact for listed in lists for i, (_, exact) in listed.shown().items()}
    verified = {i: shown[i] for i, _ in merged if shown[i] is not None}
    return {"recall": len(true_top & {i for i, _ in merged}) / args.k, "largest_error": max(errors),
            "least_error": min(errors), "bound": error_bound(args.epsilon, args.awards),
            "within_partition_bounds": all(e <= b for e, b in zip(errors, partition_bounds, strict=True)),
            "verified": len(verified),
            "verified_exact": all(c == int(counts[index[i]]) for i, c in verified.items())}  # fmt: skip


def main(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-approx-", dir=args.dir))
    try:
        t0 = time.perf_counter()
        ids, plays = stream(args)
        counts = np.bincount(plays, minlength=args.items)
        print(f"stream: {args.awards:,} awards over {args.items:,} items ({np.count_nonzero(counts):,} seen), "
              f"Zipf {args.zipf}, seed {args.seed}: {time.perf_counter() - t0:.1f} s")  # fmt: skip
        folded = fold_approximate(args, ids, plays, work)
        shape = Shape.of(args.epsilon, args.delta)
        print(f"approximate: {folded['seconds']:.1f} s through the core and RocksDB "
              f"({args.awards / folded['seconds']:,.0f} awards/s), sketch {shape.width} x {shape.depth} per partition")  # fmt: skip
        exact_disk = exact_store_bytes(ids, counts, work)
        settings = Settings()
        approx_redis, sample_redis, exact_redis = asyncio.run(
            redis_bytes(settings, folded["lists"], ids, counts, args.sample)
        )
        q = quality(args, folded["lists"], ids, counts, folded["part"])
        print(f"\n== {args.partitions} partitions, k {args.k}, epsilon {args.epsilon}, delta {args.delta}")
        print(
            f"processor state   approximate {folded['disk'] / 2**20:10.2f} MiB   exact {exact_disk / 2**20:10.2f} MiB"
        )
        print(f"Redis             approximate {approx_redis / 2**20:10.2f} MiB   exact {exact_redis / 2**20:10.2f} MiB "
              f"(estimated: {sample_redis / 2**20:.2f} MiB measured for {min(args.sample, args.items):,} items)")  # fmt: skip
        print(f"recall of the true top {args.k}: {q['recall']:.3f}")
        print(f"largest error of the top {args.k}: {q['largest_error']} (least {q['least_error']}; bound epsilon x "
              f"total = {q['bound']}; each within its partition's bound: {q['within_partition_bounds']})")  # fmt: skip
        print(f"verified of the top {args.k}: {q['verified']} (each verified count the true count: "
              f"{q['verified_exact']})")  # fmt: skip
        return {"state_bytes": {"approximate": folded["disk"], "exact": exact_disk},
                "redis_bytes": {"approximate": approx_redis, "exact_estimated": exact_redis,
                                "exact_sample": sample_redis, "sample_items": min(args.sample, args.items)},
                "fold_seconds": folded["seconds"], "awards_per_s": args.awards / folded["seconds"],
                "sketch": {"width": shape.width, "depth": shape.depth}, **q}  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


def parse() -> argparse.Namespace:
    p = parser(__doc__)
    p.add_argument("--awards", type=int, default=1_000_000, help="awards streamed (default 1000000)")
    p.add_argument("--items", type=int, default=100_000, help="distinct items (default 100000)")
    p.add_argument("--zipf", type=float, default=1.1, help="Zipf exponent of item popularity (default 1.1)")
    p.add_argument("--k", type=int, default=100, help="the board's k (default 100)")
    p.add_argument("--epsilon", type=float, default=0.001, help="sketch error per total (default 0.001)")
    p.add_argument("--delta", type=float, default=0.001, help="probability beyond the error (default 0.001)")
    p.add_argument("--partitions", type=int, default=4, help="partitions of the awards topic (default 4)")
    p.add_argument("--round", type=int, default=5000, help="awards per processor round (default 5000)")
    p.add_argument(
        "--sample", type=int, default=100_000, help="exact items written to Redis (default 100000)"
    )
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dir", default=None, help="where the stores go (default: the temp directory)")
    return p.parse_args()


if __name__ == "__main__":
    options = parse()
    recorded("approximate", options, lambda: main(options))
