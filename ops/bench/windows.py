"""Rolling-window benchmark: the expiry of one day on a large rolling board, under award traffic.

A ROLLING board of ``--days`` days is filled with ``--players`` players, each with points today and
``--active`` of them with points on the oldest day of the window too (written straight into the
awards topic, as accepted awards, so the fill is fast). Then signed awards go through the HTTP intake
at ``--rate`` for ``--baseline`` seconds, and again for ``--during`` seconds while that oldest day
expires: the expiry markers go into every awards partition, as the home lifecycle worker writes them,
and the processors rewrite the totals of exactly the players with points that day.

Prints the expiry's time (markers written -> every partition's projection past its marker), how many
totals it rewrote, and acknowledgement and freshness percentiles before and during it. Run through
``ops/bench/windows`` (it starts the servers). Options: ``--help``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
import uuid
from pathlib import Path

import httpx
from aiokafka import AIOKafkaProducer

from ops.bench.freshness import PositionHistory, freshness, freshness_figures
from ops.bench.kit import parser, percentiles, shown
from ops.bench.load import Results, Schedule, add_options, bench_settings, drive
from ops.bench.record import Figures, recorded
from ops.stack import delete_topics, region_env, start_service, stop_all, until_ready
from regions.core.boards import Board
from regions.core.periods import Period, WindowSpec, day_key, day_of, day_start_of
from regions.core.windows import encode_window
from regions.runtime.settings import Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.session import apply_migrations, connect
from regions.stores.kafka.clients import make_producer
from regions.stores.kafka.topics import ensure_topics
from regions.stores.redis.projection import RedisProjection, connect_redis
from schema.event_id import event_id, payload_digest
from schema.records import AwardEvent, Codec, totals_key
from schema.windows import ExpiryMarker, expiry_key

ROOT = Path(__file__).resolve().parents[2]
CODEC = Codec()


def _award(board: Board, user: str, match: str, amount: int, at_ms: int, settings: Settings) -> AwardEvent:
    return AwardEvent(
        event_id=event_id(board.id, match, user, "fill"), digest=payload_digest(amount, at_ms),
        board_id=board.id, match_id=match, user_id=user, award_type="fill", amount=amount, occurred_at_ms=at_ms,
        region=settings.region, accepted_at_ms=int(time.time() * 1000), aggregation="SUM", sort_order="DESC",
        tie_policy="USER_ID", home_region=settings.region, window=board.window or "",
    )  # fmt: skip


async def fill(producer: AIOKafkaProducer, settings: Settings, board: Board, args: argparse.Namespace) -> int:
    """Every player today, ``--active`` of them on the oldest day too; returns the awards written."""
    spec = WindowSpec(Period.ROLLING, args.days)
    today = day_of(spec, int(time.time() * 1000))
    oldest_at = day_start_of(spec, today - args.days + 1) + 3_600_000
    topic, now, written, started = (
        settings.kafka.topic("awards"),
        int(time.time() * 1000),
        0,
        time.monotonic(),
    )
    active = int(args.players * args.active)
    pending = []
    for n in range(args.players):
        user = f"p{n:07d}"
        for match, at in [("today", now), *([("oldest", oldest_at)] if n < active else [])]:
            award = _award(board, user, f"{match}-{n}", 1 + n % 50, at, settings)
            pending.append(await producer.send(topic, CODEC.encode(award), key=totals_key(board.id, user)))
            written += 1
        if len(pending) >= 5000:
            await asyncio.gather(*pending)
            pending.clear()
            rate = written / max(time.monotonic() - started, 1e-9)
            print(f"\r  filled {n + 1:,}/{args.players:,} players ({rate:,.0f} awards/s)", end="", flush=True)
    await asyncio.gather(*pending)
    print()
    return written


async def wait_filled(redis: RedisProjection, board: Board, players: int, prefix: str) -> float:
    """Until the projection holds every player; returns the seconds it took."""
    started, last = time.monotonic(), -1
    while (count := await redis.count(board.id)) < players:
        if count != last:
            print(f"\r  projected {count:,}/{players:,} players", end="", flush=True)
            last = count
        await asyncio.sleep(0.5)
    print(f"\r  projected {players:,}/{players:,} players")
    return time.monotonic() - started


async def expire(
    producer: AIOKafkaProducer, settings: Settings, board: Board, through: int
) -> dict[int, int]:
    """The expiry markers of every day up to ``through``; returns each partition's marker offset."""
    marker = ExpiryMarker(board_id=board.id, region=settings.region, expired_through=through,
                          aggregation="SUM", sort_order="DESC", tie_policy="USER_ID", window=board.window or "",
                          written_at_ms=int(time.time() * 1000), shards=board.shards)  # fmt: skip
    topic = settings.kafka.topic("awards")
    sent = await asyncio.gather(*(producer.send_and_wait(topic, CODEC.encode(marker), key=expiry_key(board.id),
                                                         partition=p) for p in range(settings.kafka.partitions)))  # fmt: skip
    return {m.partition: m.offset for m in sent}


async def wait_expired(projection: RedisProjection, region: str, markers: dict[int, int]) -> None:
    """Until every partition's position passes its marker: the totals the expiry wrote before it are in."""
    while True:
        offsets = (await projection.positions()).offsets
        if all(offsets.get((region, p), -1) >= o for p, o in markers.items()):
            return
        await asyncio.sleep(0.01)


async def expired_players(settings: Settings) -> float:
    async with httpx.AsyncClient() as http:
        text = (await http.get(f"http://127.0.0.1:{settings.processor.health_port}/metrics")).text
    for line in text.splitlines():
        if line.startswith('lb_processor_control_records_total{kind="expired_players"}'):
            return float(line.split()[-1])
    return 0.0


def line(name: str, r: Results) -> str:
    def q(xs: list[float]) -> str:
        return shown(percentiles(xs, (0.5, 0.99)), "8.1f", sep=" ")

    return (f"{name:8} ack ms {q(r.ack_ms)}   freshness ms {q(r.fresh_ms)}   "
            f"({r.accepted:,} accepted, {sum(r.rejected.values())} refused)")  # fmt: skip


async def phase(settings: Settings, projection: RedisProjection, board: Board, args: argparse.Namespace,
                seconds: float) -> Results:  # fmt: skip
    results, history, stop = Results(), PositionHistory(), asyncio.Event()
    watcher = asyncio.create_task(history.watch(projection, stop, results.pending))
    await drive(Schedule.of(args, settings.intake.port, board.id, seconds, occurred_at=True), results)
    stop.set()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(watcher, 60)  # what is not visible by then counts as never visible
    freshness(history, results)
    return results


async def main(args: argparse.Namespace) -> Figures:
    tag = uuid.uuid4().hex[:8]
    settings = bench_settings(f"benchw{tag}")
    spec = WindowSpec(Period.ROLLING, args.days)
    board = Board(f"benchw-{tag}", "Rolling benchmark", settings.region, window=encode_window(spec))
    print(f"== setup: topics {settings.kafka.topic_prefix}.*, rolling board of {args.days} days, "
          f"{args.players:,} players, {args.active:.0%} active on the day that expires")  # fmt: skip
    await ensure_topics(settings.kafka)
    apply_migrations(settings.cassandra)  # re-runnable: the catalog tables this release needs
    cluster, session = connect(settings.cassandra)
    await CassandraCatalog(session).create(board)
    cluster.shutdown()
    logs = ROOT / ".data" / "logs" / f"benchw-{tag}"
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **region_env(settings)}
    procs = {s: start_service(s, env, logs) for s in ("processor", "projector", "intake")}
    redis = connect_redis(settings.redis)
    projection = RedisProjection(redis, settings.redis.key_prefix)
    producer = make_producer(settings.kafka)
    await producer.start()
    try:
        await until_ready(settings, procs, logs, 120)
        started = time.monotonic()
        written = await fill(producer, settings, board, args)
        projected_s = await wait_filled(projection, board, args.players, settings.redis.key_prefix)
        print(f"  {written:,} awards filled and projected in {time.monotonic() - started:.1f} s "
              f"(the last {projected_s:.1f} s waiting for the projection)")  # fmt: skip
        print(f"== {args.baseline:.0f} s of awards at {args.rate}/s, no expiry", flush=True)
        before = await phase(settings, projection, board, args, args.baseline)
        today = day_of(spec, int(time.time() * 1000))
        oldest = today - args.days + 1
        expired_before = await expired_players(settings)
        print(
            f"== {args.during:.0f} s of awards at {args.rate}/s; day {day_key(oldest)} expires at its start",
            flush=True,
        )
        load = asyncio.create_task(phase(settings, projection, board, args, args.during))
        written_at = time.monotonic()
        markers = await expire(producer, settings, board, oldest)
        await wait_expired(projection, settings.region, markers)
        expiry_s = time.monotonic() - written_at
        during = await load
        changed = await expired_players(settings) - expired_before
        print("\n== results")
        print(
            f"expiry                 {expiry_s:8.2f} s   (markers written -> every partition's projection past them)"
        )
        print(f"totals rewritten       {changed:10,.0f}   (players with points on {day_key(oldest)}: "
              f"{int(args.players * args.active):,}; board: {args.players:,})")  # fmt: skip
        print(line("before", before))
        print(line("during", during))
        if expiry_s > args.during:
            print(f"note: the expiry outlasted the {args.during:.0f} s of load; raise --during to cover it")
        return {"filled_awards": written, "projected_s": projected_s, "expiry_s": expiry_s,
                "totals_rewritten": changed, "players_on_expired_day": int(args.players * args.active),
                "before": {**before.figures(args.baseline), **freshness_figures(before)},
                "during": {**during.figures(args.during), **freshness_figures(during)}}  # fmt: skip
    finally:
        await producer.stop()
        stop_all(procs.values())
        keys = [k async for k in redis.scan_iter(match=f"{settings.redis.key_prefix}:*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()
        await delete_topics(
            settings.kafka, f"{settings.kafka.topic_prefix}."
        )  # a broker keeps no bench's data


def parse() -> argparse.Namespace:
    p = parser(__doc__)
    add_options(p, rate=1000, rate_help="awards per second offered meanwhile", connections=16,
                connections_help="concurrent HTTP connections", players=1_000_000,
                players_help="players on the board", duration=False)  # fmt: skip
    p.add_argument(
        "--active", type=float, default=0.1, help="share with points on the day that expires (0.1)"
    )
    p.add_argument("--days", type=int, default=7, help="length of the rolling window (default 7)")
    p.add_argument(
        "--baseline", type=float, default=20, help="seconds of load before the expiry (default 20)"
    )
    p.add_argument("--during", type=float, default=30, help="seconds of load from the expiry on (default 30)")
    args = p.parse_args()
    args.players = max(1, args.players)
    return args


if __name__ == "__main__":
    options = parse()
    recorded("windows", options, lambda: asyncio.run(main(options)))
