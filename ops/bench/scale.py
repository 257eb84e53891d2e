"""Full-size benchmark: one board of N players (default 25,000,000) projected into a Redis of its own.

The players arrive through the totals topic, written here as the processor writes it (a versioned
absolute total per player), not through intake: the pipeline accepts about 3,000 awards a second
on this machine, so 25 million players would take more than two hours before a single figure.
What this measures starts at the totals topic anyway: the projection's rebuild from it, the Redis
memory it takes, and the reads on it.

Steps, each resumable (the state file under ``.data/bench-scale`` remembers what is done):

1. load:    write the players' totals to ``<prefix>.totals.v1`` on the shared Kafka, with progress;
            after an interruption it continues from each partition's end offset.
2. rebuild: rebuild the projection from the totals topic into a Redis started for the benchmark
            (port 6390, no persistence), with progress; an interrupted rebuild resumes.
3. memory:  Redis bytes per member (used_memory of the benchmark Redis over the members; the
            ranking, the records hash with each player's version, the positions).
4. ratio:   the rebuild's totals/s against pipelined redis-benchmark calling the same Lua script.
5. reads:   top-10, player and context latency through the gateway at a paced 500 q/s.

The benchmark's Redis is stopped at the end (``--keep-redis`` leaves it for another run of the reads);
``--clean`` deletes its topics and state. Run through ``ops/bench/scale``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import uvloop
from aiokafka import AIOKafkaConsumer, TopicPartition
from pipeline import redis_benchmark  # type: ignore[import-not-found]  # ops/bench, run as a script
from reads import CONTEXT, PLAYER, TOP, paced, post, start, stop  # type: ignore[import-not-found]

from regions.cassandra_catalog import CassandraCatalog
from regions.cassandra_store import apply_migrations
from regions.cassandra_store import connect as connect_cassandra
from regions.core.boards import Board, SortOrder, TiePolicy
from regions.kafka_clients import ensure_topics, make_producer
from regions.projector.command import ProgressPrinter
from regions.projector.rebuild import rebuild
from regions.redis_projection import RedisProjection, connect_redis
from regions.settings import Settings, load_settings
from schema.records import Codec, PlayerTotal, totals_key
from schema.redis_keys import board_keys
from tests.harness import delete_topics, free_port

ROOT = Path(__file__).resolve().parents[2]
STATE_DIR = ROOT / ".data" / "bench-scale"
BOARD = "scale-board"
PREFIX = "lbscale"
REDIS_PORT = 6390


def user_id(i: int) -> str:
    return f"s{i:08d}"


class State:
    """What is done, kept in a file so an interrupted run resumes."""

    def __init__(self, players: int) -> None:
        self.path = STATE_DIR / "state.json"
        self.data: dict[str, object] = json.loads(self.path.read_text()) if self.path.exists() else {}
        if self.data.get("players", players) != players:
            sys.exit(
                f"the state in {self.path} is for {self.data['players']:,} players: run with --clean first"
            )
        self.data["players"] = players

    def done(self, step: str) -> bool:
        return step in self.data

    def record(self, step: str, figures: dict[str, float]) -> None:
        self.data[step] = figures
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.data, indent=2))


def settings_for(redis_url: str) -> Settings:
    base = load_settings()
    return base.model_copy(
        update={
            "kafka": base.kafka.model_copy(update={"topic_prefix": PREFIX}),
            "redis": base.redis.model_copy(update={"url": redis_url, "key_prefix": PREFIX}),
        }
    )


# ------------------------------------------------------------------ 1. load


async def end_offsets(settings: Settings) -> dict[int, int]:
    topic = settings.kafka.topic("totals")
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.kafka.bootstrap_servers)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(settings.kafka.partitions)]
        return {tp.partition: offset for tp, offset in (await consumer.end_offsets(tps)).items()}
    finally:
        await consumer.stop()


async def load(settings: Settings, players: int) -> None:
    """Player i goes to partition i mod P, in order, so each partition's end offset says how far it
    got. Records go as whole record batches per partition (a send per record is ten times slower)."""
    await ensure_topics(settings.kafka)
    parts, topic, codec = settings.kafka.partitions, settings.kafka.topic("totals"), Codec()
    ends = await end_offsets(settings)
    first = min(ends[p] * parts + p for p in range(parts))
    if first >= players:
        print(f"   all {players:,} players are in {topic} already")
        return
    if first:
        print(f"   resuming at player {first:,} of {players:,}")
    rng = random.Random(first)
    producer = make_producer(settings.kafka)
    await producer.start()
    started, pending = time.perf_counter(), []
    batches = [producer.create_batch() for _ in range(parts)]

    async def flush(p: int) -> None:
        pending.append(await producer.send_batch(batches[p], topic, partition=p))
        batches[p] = producer.create_batch()

    try:
        for i in range(first, players):
            p = i % parts
            if i // parts < ends[p]:
                continue
            user = user_id(i)
            total = PlayerTotal(
                board_id=BOARD, user_id=user, total=rng.randrange(0, 100_000_000), version=1,
                reached=f"{i:027x}", sort_order="DESC", tie_policy="USER_ID", source_partition=p,
                source_offset=i // parts, event_id=f"{i:032x}", source_region=settings.region,
            )  # fmt: skip
            key, value = totals_key(BOARD, user), codec.encode(total)
            if batches[p].append(key=key, value=value, timestamp=None) is None:
                await flush(p)
                batches[p].append(key=key, value=value, timestamp=None)
            if (i + 1) % 500_000 == 0:
                await asyncio.gather(*pending)
                pending.clear()
                rate = (i + 1 - first) / (time.perf_counter() - started)
                print(f"   written {i + 1:,} of {players:,} players ({rate:,.0f}/s, "
                      f"{(players - i - 1) / rate:,.0f} s left)", flush=True)  # fmt: skip
        for p in range(parts):
            if batches[p].record_count():
                await flush(p)
        await asyncio.gather(*pending)
        print(f"   written {players:,} of {players:,} players in {time.perf_counter() - started:,.0f} s")
    finally:
        await producer.stop()


# ------------------------------------------------------------------ 2. the benchmark's Redis and the rebuild


def redis_answers() -> bool:
    ping = subprocess.run(["redis-cli", "-p", str(REDIS_PORT), "ping"], capture_output=True, text=True)
    return ping.stdout.strip() == "PONG"


def start_redis() -> None:
    if redis_answers():
        return
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["redis-server", "--port", str(REDIS_PORT), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(STATE_DIR), "--daemonize", "yes", "--pidfile", str(STATE_DIR / "redis.pid"),
         "--logfile", str(STATE_DIR / "redis.log")],
        check=True,
    )  # fmt: skip
    for _ in range(100):
        if redis_answers():
            return
        time.sleep(0.1)
    sys.exit(f"the benchmark's Redis did not start; see {STATE_DIR / 'redis.log'}")


def stop_redis() -> None:
    subprocess.run(["redis-cli", "-p", str(REDIS_PORT), "shutdown", "nosave"], capture_output=True)


def used_memory() -> int:
    out = subprocess.run(
        ["redis-cli", "-p", str(REDIS_PORT), "info", "memory"], capture_output=True, text=True
    ).stdout
    return int(next(line.split(":")[1] for line in out.splitlines() if line.startswith("used_memory:")))


async def project(settings: Settings, state: State, players: int) -> None:
    redis = connect_redis(settings.redis)
    projection = RedisProjection(redis, PREFIX)
    try:
        keys = board_keys(PREFIX, BOARD)
        whole = await projection.count(keys) == players and not (await projection.positions()).rebuilding
        if whole and state.done("rebuild"):
            print(f"   the benchmark's Redis holds the {players:,} players already")
            return
        empty = used_memory() if await redis.dbsize() == 0 else None
        printer = ProgressPrinter(lambda line: print(line, flush=True))
        started = time.perf_counter()
        report = await rebuild(settings, projection, show=printer.show)
        seconds = time.perf_counter() - started
        members = await projection.count(keys)
        print(f"   rebuilt {report.records:,} totals offsets into {members:,} members in {seconds:,.1f} s "
              f"({report.records / seconds:,.0f} totals/s)")  # fmt: skip
        figures = {"seconds": seconds, "records": report.records, "rate": report.records / seconds}
        if empty is not None:
            figures["empty_bytes"] = empty
        state.record("rebuild", figures)
    finally:
        await redis.aclose()


# ------------------------------------------------------------------ 5. reads through the gateway


async def reads(settings: Settings, players: int, rate: float, duration: float) -> dict[str, float]:
    board = Board(BOARD, "Scale benchmark board", settings.region, sort_order=SortOrder.DESC,
                  tie_policy=TiePolicy.USER_ID)  # fmt: skip
    apply_migrations(settings.cassandra)
    cluster, session = connect_cassandra(settings.cassandra)
    await CassandraCatalog(session).create(board)  # False when it exists: the same board
    cluster.shutdown()
    port = free_port()
    (ROOT / ".data" / "logs").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "LB_REDIS__URL": settings.redis.url, "LB_REDIS__KEY_PREFIX": PREFIX,
           "LB_KAFKA__TOPIC_PREFIX": PREFIX, "LB_GATEWAY__PORT": str(port)}  # fmt: skip
    gateway = await start("gateway", ["-m", "gateway"], env, port, "/readyz")
    rng = random.Random(5)
    queries = {
        "top(k: 10)": lambda: post(port, TOP % BOARD),
        "player": lambda: post(port, PLAYER % (BOARD, user_id(rng.randrange(players)))),
        "context(4)": lambda: post(port, CONTEXT % (BOARD, user_id(rng.randrange(players)))),
    }
    p99: dict[str, float] = {}
    try:
        await paced("warm-up", port, queries["player"], 16, rate, 2)
        for label, make in queries.items():
            result = await paced(label, port, make, 16, rate, duration)
            print(result.line(), flush=True)
            p99[label] = result.p99_ms
    finally:
        await stop(gateway)
    return p99


# ------------------------------------------------------------------ main


async def run(args: argparse.Namespace) -> None:
    settings = settings_for(f"redis://127.0.0.1:{REDIS_PORT}/0")
    if args.clean:
        print(f"== deleting the benchmark's topics ({PREFIX}.*), its Redis and its state")
        await delete_topics(settings.kafka, f"{PREFIX}.")
        stop_redis()
        for name in ("state.json", "redis.log", "redis.pid"):
            (STATE_DIR / name).unlink(missing_ok=True)
        return
    state = State(args.players)
    print(f"== 1. load: totals topic {settings.kafka.topic('totals')}")
    await load(settings, args.players)
    start_redis()
    try:
        print(
            f"== 2. rebuild of the projection from the totals topic into the benchmark's Redis (:{REDIS_PORT})"
        )
        await project(settings, state, args.players)
        used = used_memory()
        empty = float(state.data.get("rebuild", {}).get("empty_bytes", 0))  # type: ignore[union-attr]
        per_member = (used - empty) / args.players
        print(f"== 3. memory: {used / 2**20:,.0f} MiB used, {per_member:,.1f} B per member "
              f"(target <= 180 B: {'met' if per_member <= 180 else 'MISSED'})")  # fmt: skip
        if not state.done("ratio"):
            print("== 4. redis-benchmark: the same Lua script, one total per call, pipelined (-P 64)")
            reference = statistics.median(redis_benchmark(settings, 200_000) for _ in range(3))
            state.record("ratio", {"redis_benchmark": reference})
        reference = float(state.data["ratio"]["redis_benchmark"])  # type: ignore[index]
        rebuild_rate = float(state.data["rebuild"]["rate"])  # type: ignore[index]
        ratio = rebuild_rate / reference
        print(f"   rebuild {rebuild_rate:,.0f} totals/s, redis-benchmark {reference:,.0f} calls/s: {ratio:.2f}x "
              f"(target >= 0.4x: {'met' if ratio >= 0.4 else 'MISSED'})")  # fmt: skip
        print(f"== 5. reads through the gateway, paced at {args.rate:.0f} q/s, {args.duration:.0f} s each")
        p99 = await reads(settings, args.players, args.rate, args.duration)
        for label, value in p99.items():
            print(f"   {label:12} p99 {value:6.1f} ms (target < 10 ms: {'met' if value < 10 else 'MISSED'})")
    finally:
        if not args.keep_redis:
            stop_redis()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--players", type=int, default=25_000_000, help="players on the board (default 25,000,000)"
    )
    parser.add_argument(
        "--rate", type=float, default=500, help="paced reads: requests per second (default 500)"
    )
    parser.add_argument("--duration", type=float, default=20, help="seconds per read run (default 20)")
    parser.add_argument("--keep-redis", action="store_true", help="leave the benchmark's Redis running")
    parser.add_argument("--clean", action="store_true", help="delete the benchmark's topics, Redis and state")
    args = parser.parse_args()
    if not args.clean:
        free = subprocess.run(["free", "-g"], capture_output=True, text=True).stdout.splitlines()[1].split()
        print(f"== {args.players:,} players on one board; memory now: {free[6]} GiB available of {free[1]} GiB "
              "(the board takes about 5 GiB of Redis at 25M players)")  # fmt: skip
    uvloop.run(run(args))


if __name__ == "__main__":
    main()
