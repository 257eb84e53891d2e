"""Close benchmark: archiving a large board's final standings as chunked result version 1.

Fills a fresh Redis projection with one board of ``--players`` players the way the projector writes
it (the projection's own Lua script), then archives it as the home lifecycle worker does when every
cutoff is reached: chunks of ``--chunk-size`` ranked entries written to Cassandra, then the header.
Prints the archive's seconds, players/s, Cassandra rows and bytes written, and the time to read a
page from the middle of the result. Then archives again, as a worker restarted after CLOSED would
(nothing is written), and cleans up: the Redis keys and the benchmark's own keyspace.

The steps before the archive (intakes refusing, markers, the processor reaching them) take the
marker delay plus seconds whatever the board's size; the archive is what grows with the board.

Run through ``ops/bench/close`` (it starts the servers). Options: ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from datetime import UTC, datetime

from ops.bench.kit import parser
from ops.bench.record import Figures, recorded
from ops.bench.steps import archive_timed
from regions.core.boards import Board
from regions.core.ordering import encode, reached_position
from regions.lifecycle.archive import archive_projection
from regions.runtime.settings import load_settings
from regions.stores.cassandra.results import CassandraResults
from regions.stores.cassandra.session import apply_migrations, connect
from regions.stores.redis.projection import ProjectedTotal, RedisProjection, connect_redis
from schema.redis_keys import board_keys

FILL_BATCH = 5000


async def fill(projection: RedisProjection, board: Board, players: int) -> None:
    for first in range(0, players, FILL_BATCH):
        totals = []
        for i in range(first, min(first + FILL_BATCH, players)):
            user, total = f"player-{i:09d}", (i * 7919) % 1_000_003
            score, member = encode(board.sort_order, board.tie_policy, user, total, reached_position(0, 0, i))
            totals.append(ProjectedTotal(user, 1, total, score, member))
        await projection.apply(board.id, totals, board.shards)


async def main(args: argparse.Namespace) -> Figures:
    settings = load_settings()
    tag = uuid.uuid4().hex[:8]
    prefix, keyspace = f"bench-close-{tag}", f"lbbench_close_{tag}"
    cassandra = settings.cassandra.model_copy(update={"keyspace": keyspace})
    apply_migrations(cassandra)
    cluster, session = connect(cassandra)
    redis = connect_redis(settings.redis)
    board = Board("bench-close", "Close benchmark", settings.region, shards=args.shards)
    try:
        started = time.perf_counter()
        projection = RedisProjection(redis, prefix)
        await fill(projection, board, args.players)
        fill_s = time.perf_counter() - started
        print(f"filled the projection with {args.players:,} players in {fill_s:.1f} s")
        results = CassandraResults(session)
        timed = await archive_timed(redis, prefix, results, board, args.chunk_size)
        header, seconds = timed.archived.header, timed.seconds
        rows = timed.archived.chunks_written + 1
        rows_read = session.execute("SELECT ranked FROM board_result_chunks", timeout=120)
        size = sum(len(r.ranked) for r in rows_read)
        print(f"archived {header.player_count:,} players in {seconds:.1f} s ({header.player_count / seconds:,.0f} "
              f"players/s): {header.chunk_count} chunks of {header.chunk_size} + 1 header = {rows} Cassandra "
              f"rows, {size / 1e6:.1f} MB of chunk blobs")  # fmt: skip
        print(f"read ranks {timed.first + 1}..{timed.first + timed.entries} in {timed.page_ms:.0f} ms")
        started = time.perf_counter()
        again = await archive_projection(redis, prefix, results, board, version=1, reason="benchmark",
                                         chunk_size=args.chunk_size, created_at=datetime.now(UTC))  # fmt: skip
        again_ms = (time.perf_counter() - started) * 1000
        print(f"archived again (a restarted worker): {again.chunks_written} chunks written in {again_ms:.0f} ms")
        return {"fill_s": fill_s, "players": header.player_count, "seconds": seconds,
                "players_per_s": header.player_count / seconds, "chunks": header.chunk_count,
                "chunk_size": header.chunk_size, "rows": rows, "chunk_bytes": size, "page_first_rank": timed.first + 1,
                "page_entries": timed.entries, "page_ms": timed.page_ms,
                "again_chunks_written": again.chunks_written, "again_ms": again_ms}  # fmt: skip
    finally:
        await projection.drop([board.id])
        await projection.layouts.delete_retired()
        await redis.delete(board_keys(prefix, board.id).sequence)
        await redis.aclose()
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
        cluster.shutdown()


def parse() -> argparse.Namespace:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--players", type=int, default=1_000_000, help="players on the board")
    p.add_argument("--chunk-size", type=int, default=10_000, help="ranked entries per chunk")
    p.add_argument("--shards", type=int, default=1, help="the board's shards (default 1)")
    return p.parse_args()


if __name__ == "__main__":
    options = parse()
    recorded("close", options, lambda: asyncio.run(main(options)))
