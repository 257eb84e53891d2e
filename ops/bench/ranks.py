"""Shared ranks and friends lists on Redis (a script that prints figures, not a test).

Seeds two boards of N players (default 200,000) straight into Redis with ``RedisProjection.apply``:
one of distinct scores and one of a few scores (every window starts inside a tie, so each read also
counts by score), each on 1 shard and on S shards (default 4). Then, one read at a time from this
process, prints the latency (p50/p95/p99, ms) of ``RankReader.context(range 4)`` (its shared ranks
included) and of ``RankReader.players`` for F ids (default 100). Point it at a Redis with
``LB_REDIS__URL`` (``eval "$(ops/services env)"``); its keys are removed afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
import uuid
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis

from ops.bench.kit import parser, percentiles, shown
from regions.core.boards import Board
from regions.core.ordering import encode, reached_position
from regions.runtime.settings import Settings
from regions.stores.redis.projection import ProjectedTotal, RedisProjection
from regions.stores.redis.reads import RankReader


async def _seed(projection: RedisProjection, board: Board, players: int, scores: int) -> None:
    batch: list[ProjectedTotal] = []
    for i in range(players):
        user, total = f"p{i:07d}", (i * 7919) % scores
        score, member = encode(board.sort_order, board.tie_policy, user, total, reached_position(1, 0, i))
        batch.append(ProjectedTotal(user, 1, total, score, member))
        if len(batch) == 5000 or i == players - 1:
            await projection.apply(board.id, batch, board.shards)
            batch = []


def _user(rng: random.Random, players: int) -> str:
    return f"p{rng.randrange(players):07d}"


async def _timed(read: Callable[[], Awaitable[object]], reads: int) -> str:
    took = []
    for _ in range(reads):
        started = time.perf_counter()
        await read()
        took.append(time.perf_counter() - started)
    return shown(percentiles(took, scale=1000), ".2f", unit=" ms")


async def _measure(
    reader: RankReader, board: Board, args: argparse.Namespace, rng: random.Random
) -> tuple[str, str]:
    """The latency of context(4) and of players(friends) on ``board``, each from random players."""
    context = await _timed(lambda: reader.context(board, _user(rng, args.players), 4), args.reads)
    friends = await _timed(
        lambda: reader.players(board, [_user(rng, args.players) for _ in range(args.friends)]),
        args.reads // 5,
    )
    return context, friends


async def main() -> None:
    p = parser(__doc__)
    p.add_argument("--players", type=int, default=200_000)
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--friends", type=int, default=100)
    p.add_argument("--reads", type=int, default=500)
    args = p.parse_args()
    settings = Settings()
    redis = Redis.from_url(settings.redis.url, decode_responses=True)
    prefix = f"bench-ranks-{uuid.uuid4().hex[:8]}"
    projection = RedisProjection(redis, prefix)
    reader = RankReader(projection, prefix, "local")
    rng = random.Random(7)
    try:
        for scores, label in ((args.players * 10, "distinct scores"), (10, "10 scores (ties)")):
            for shards in (1, args.shards):
                board = Board(f"b-{uuid.uuid4().hex[:8]}", "bench", "local", shards=shards)
                await _seed(projection, board, args.players, scores)

                context, friends = await _measure(reader, board, args, rng)
                print(f"{label:>17}, {shards} shard(s): context(4) {context}")
                print(f"{'':>17}  {'':>10}  players({args.friends}) {friends}")
    finally:
        async for key in redis.scan_iter(match=f"*{prefix}*", count=1000):
            await redis.delete(key)
        await redis.aclose()


if __name__ == "__main__":
    asyncio.run(main())
