"""Full-size benchmark: one board of N players (default 25,000,000) projected into a Redis of its own,
or into a Redis Cluster of 3 masters of its own (``--redis-cluster``), in 1 or more shards.

The players arrive through the totals topic, written here as the processor writes it (a versioned
absolute total per player), not through the intake: the pipeline accepts about 3,000 awards a
second on this machine, so 25 million players would take more than two hours before a single
figure, and what this measures starts at the totals topic anyway (the projection's rebuild from
it, the memory it takes, the reads on it). The processor does not run here: its disk and memory
per player are what ``ops/bench/restore`` measures for one partition.

Steps, each resumable (``.data/bench-scale/state.json`` remembers what is done and the seconds
spent, so a run interrupted by a shell's time limit goes on where it stopped when started again):

1. load:    write the players' totals to ``<prefix>.totals.v1`` on the shared Kafka, with progress;
            after an interruption it continues from each partition's end offset.
2. rebuild: rebuild the projection from the totals topic into the benchmark's Redis (standalone on
            LB_OPS_BENCH_REDIS_PORT, default 6390; a cluster on the 3 ports after it), laid out in
            ``--shards`` shards, with progress; an interrupted rebuild resumes its replay where it
            stopped (its checkpoint is in that Redis, which outlives the run unless stopped).
3. memory:  Redis bytes per member (used_memory over every master, less what the empty servers used,
            over the members: the rankings, the version buckets, the positions; with
            ``--metadata-bytes N`` every player's total carries N bytes of award metadata, held in
            the metadata buckets too). ``--memory-only`` stops here.
4. ratio:   the rebuild's totals/s against redis-benchmark calling the same Lua script with one total
            per call, pipelined (-P 64; on the cluster with --cluster).
5. apply:   the live projector's apply rate: ``--apply`` changed totals (a new version each) through
            ``RedisProjection.apply_live`` in batches of the projector's size, as the live loop does.
6. reads:   the reader's cost of top-10, player and context reads (``RankReader`` in this process,
            ``--reader-reads`` of each one at a time: CPU and wall time per read, GraphQL and HTTP
            not counted); then their latency through the gateway at a paced rate (default 500
            q/s), with the gateway's CPU per request, and pages of 100: from a rank deep in the board
            (``--page-rank``, default 40% of it: rank 10,000,000 of 25M), and after cursors read at
            random ranks (``--no-pages`` leaves the pages out).
7. archive: the lifecycle's archive of the board's final standings (chunks of the lifecycle's
            chunk size, then the header) into a Cassandra keyspace of the benchmark's own, as the
            home lifecycle worker writes it once every cutoff is reached; then a page from the
            middle read back. The keyspace is dropped afterwards (``--keep-archive`` keeps it;
            ``--no-archive`` leaves the step out).

``--keep-redis`` leaves the benchmark's Redis running for another run of the reads (an interrupted
run always leaves it, to resume); ``--clean`` deletes the benchmark's topics, Redis servers and state. Run through ``ops/bench/scale``; compare 1
and 4 shards with ``--redis-cluster`` and ``--redis-cluster --shards 4`` (each mode keeps its own
figures and its own Redis, so run one mode to its end, or with --clean between).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import uvloop

from ops.bench.kit import parser
from ops.bench.queries import CONTEXT, PAGE_AFTER, PAGE_FROM, PLAYER, TOP, cursors, paced, post, start, stop
from ops.bench.record import Figures, recorded
from ops.bench.steps import archive_timed, reader_cost, redis_benchmark, redis_cli
from ops.clusters import end_offsets
from ops.stack import delete_topics, free_port
from regions.cli.projection import ProgressPrinter
from regions.core.boards import Board, SortOrder, TiePolicy
from regions.core.ordering import encode
from regions.projector.rebuild import rebuild, rebuild_to_run
from regions.runtime.settings import Settings, load_settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.results import CassandraResults
from regions.stores.cassandra.session import apply_migrations
from regions.stores.cassandra.session import connect as connect_cassandra
from regions.stores.kafka.clients import make_producer
from regions.stores.kafka.topics import ensure_topics
from regions.stores.redis.control import ProjectionControl, RebuildCause, RebuildRequest
from regions.stores.redis.projection import BoardTotals, ProjectedTotal, RedisProjection, connect_redis
from regions.stores.redis.reads import RankReader
from schema.records import Codec, PlayerTotal, totals_key
from schema.redis_keys import LISTPACK_ENTRIES, LISTPACK_VALUE

ROOT = Path(__file__).resolve().parents[2]
STATE_DIR = ROOT / ".data" / "bench-scale"
BOARD = "scale-board"
PREFIX = os.environ.get("LB_OPS_BENCH_SCALE_PREFIX", "lbscale")  # its topics and Redis keys
REDIS_PORT = int(os.environ.get("LB_OPS_BENCH_REDIS_PORT", "6390"))
CLUSTER_PORTS = [REDIS_PORT + 1 + i for i in range(3)]
RECORD_EVERY_S = 5.0
ARCHIVE_KEYSPACE = "lbbench_scale"


def user_id(i: int) -> str:
    return f"s{i:08d}"


class State:
    """What is done, kept in a file so an interrupted run resumes; ``mode`` names the Redis layout."""

    def __init__(self, players: int, mode: str, metadata_bytes: int = 0) -> None:
        self.path = STATE_DIR / "state.json"
        self.data: dict[str, Any] = json.loads(self.path.read_text()) if self.path.exists() else {}
        if self.data.get("players", players) != players:
            sys.exit(
                f"the state in {self.path} is for {self.data['players']:,} players: run with --clean first"
            )
        if self.data.get("metadata_bytes", metadata_bytes) != metadata_bytes:  # the topic holds the others
            sys.exit(f"the state in {self.path} is for {self.data['metadata_bytes']} bytes of metadata per "
                     "player: run with --clean first")  # fmt: skip
        self.data["players"], self.data["metadata_bytes"] = players, metadata_bytes
        self.mode = self.data.setdefault(mode, {})

    def done(self, step: str) -> bool:
        return step in self.mode

    def record(self, step: str, figures: dict[str, Any]) -> None:
        self.mode[step] = figures
        self.save()

    def save(self) -> None:
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


def metadata_of(i: int, size: int) -> str:
    """Award metadata of exactly ``size`` bytes for player i (none for 0), each player's its own."""
    if size == 0:
        return ""
    frame = len('{"m":""}')
    if size < frame:
        sys.exit(f"--metadata-bytes must be 0 or at least {frame}")
    filler = size - frame
    return '{"m":"' + f"{i:x}".rjust(filler, "x") + '"}'


async def load(settings: Settings, players: int, metadata_bytes: int = 0) -> None:
    """Player i goes to partition i mod P, in order, so each partition's end offset says how far it
    got. Records go as whole record batches per partition (a send per record is ten times slower)."""
    await ensure_topics(settings.kafka)
    parts, topic, codec = settings.kafka.partitions, settings.kafka.topic("totals"), Codec()
    ends = await end_offsets(settings, "totals")
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
                metadata=metadata_of(i, metadata_bytes),
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


def answers(port: int) -> bool:
    return redis_cli(port, "ping").strip() == "PONG"


def start_server(port: int, *extra: str) -> None:
    if answers(port):
        return
    folder = STATE_DIR / f"redis-{port}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nodes.conf").unlink(missing_ok=True)  # no persistence: a server starts empty, in no cluster
    subprocess.run(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(folder), "--daemonize", "yes", "--pidfile", str(folder / "redis.pid"),
         "--logfile", str(folder / "redis.log"), "--hash-max-listpack-entries", str(LISTPACK_ENTRIES),
         "--hash-max-listpack-value", str(LISTPACK_VALUE), *extra],
        check=True,
    )  # fmt: skip
    for _ in range(100):
        if answers(port):
            return
        time.sleep(0.1)
    sys.exit(f"the benchmark's Redis on {port} did not start; see {folder / 'redis.log'}")


def start_redis(cluster: bool) -> list[int]:
    """The benchmark's Redis servers: one, or the 3 masters of a cluster (made once)."""
    if not cluster:
        start_server(REDIS_PORT)
        return [REDIS_PORT]
    for port in CLUSTER_PORTS:
        start_server(port, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
    if "cluster_known_nodes:3" not in redis_cli(CLUSTER_PORTS[0], "cluster", "info"):
        subprocess.run(["redis-cli", "--cluster", "create", *(f"127.0.0.1:{p}" for p in CLUSTER_PORTS),
                        "--cluster-replicas", "0", "--cluster-yes"], capture_output=True, check=True)  # fmt: skip
        for _ in range(200):
            if all("cluster_state:ok" in redis_cli(p, "cluster", "info") for p in CLUSTER_PORTS):
                break
            time.sleep(0.1)
        else:
            sys.exit(
                "the benchmark's Redis Cluster did not become ready; see .data/bench-scale/redis-*/redis.log"
            )
    return CLUSTER_PORTS


def stop_redis() -> None:
    for port in [REDIS_PORT, *CLUSTER_PORTS]:
        redis_cli(port, "shutdown", "nosave")


def used_memory(ports: list[int]) -> int:
    used = 0
    for port in ports:
        info = redis_cli(port, "info", "memory")
        used += int(next(line.split(":")[1] for line in info.splitlines() if line.startswith("used_memory:")))
    return used


def keys_in(ports: list[int]) -> int:
    return sum(int(redis_cli(port, "dbsize").strip() or 0) for port in ports)


async def project(settings: Settings, state: State, players: int, shards: int, ports: list[int]) -> None:
    """The rebuild, resumed if an earlier run was interrupted; its seconds add up across runs."""
    redis = connect_redis(settings.redis)
    projection = RedisProjection(redis, PREFIX)
    try:
        layout = await projection.layouts.live_one(BOARD)
        if state.done("rebuild") and layout is not None and layout.shards == shards:
            print(f"   the benchmark's Redis holds the {players:,} players already")
            return
        if keys_in(ports) == 0:
            state.mode["empty_bytes"] = used_memory(ports)
        spent = float(state.mode.get("rebuild_seconds_so_far", 0.0))
        if spent:
            print(f"   resuming an interrupted rebuild ({spent:,.0f} s spent on it so far)")
        printer, started, noted = (
            ProgressPrinter(lambda line: print(line, flush=True)),
            time.perf_counter(),
            0.0,
        )

        def show(request: RebuildRequest) -> None:
            nonlocal noted
            printer.show(request)
            if time.perf_counter() - noted >= RECORD_EVERY_S:  # what an interruption must not lose
                noted = time.perf_counter()
                state.mode["rebuild_seconds_so_far"] = spent + noted - started
                state.save()

        # A new Redis: an epoch of its own first (nothing was lost), then the board in the layout asked for.
        await rebuild_to_run(projection, ProjectionControl(redis, PREFIX), first_life=True)
        wanted = RebuildRequest.new(RebuildCause.RESHARD, BOARD, shards)
        report = await rebuild(settings, projection, show=show, wanted=wanted)
        seconds = spent + time.perf_counter() - started
        members = await projection.count(BOARD)
        print(f"   rebuilt {report.records:,} totals offsets into {members:,} members in {shards} shard(s) in "
              f"{seconds:,.1f} s ({report.records / seconds:,.0f} totals/s)")  # fmt: skip
        state.mode.pop("rebuild_seconds_so_far", None)
        state.record(
            "rebuild", {"seconds": seconds, "records": report.records, "rate": report.records / seconds}
        )
        await projection.layouts.delete_retired()
    finally:
        await redis.aclose()


# ------------------------------------------------------------------ 5. the live projector's apply rate


async def apply_rate(settings: Settings, players: int, count: int) -> float:
    """Totals/s of the live apply path: ``count`` players (at random) get a new version and total,
    in batches of ``projector.max_batch`` as the live loop applies them."""
    redis = connect_redis(settings.redis)
    projection, rng, batch = RedisProjection(redis, PREFIX), random.Random(11), settings.projector.max_batch
    version = 2 + int(time.time())  # newer than anything applied before, run after run
    try:
        started = time.perf_counter()
        for first in range(0, count, batch):
            totals = []
            for i in rng.sample(range(players), min(batch, count - first)):
                total = rng.randrange(0, 100_000_000)
                score, member = encode(SortOrder.DESC, TiePolicy.USER_ID, user_id(i), total, "")
                totals.append(ProjectedTotal(user_id(i), version, total, score, member))
            await projection.apply_live([BoardTotals(BOARD, 1, totals)])
        return count / (time.perf_counter() - started)
    finally:
        await redis.aclose()


# ------------------------------------------------------------------ 6. reads through the gateway


def board_of(settings: Settings, shards: int) -> Board:
    return Board(BOARD, "Scale benchmark board", settings.region, sort_order=SortOrder.DESC,
                 tie_policy=TiePolicy.USER_ID, shards=shards)  # fmt: skip


async def reader_costs(
    settings: Settings, players: int, shards: int, count: int
) -> dict[str, dict[str, float]]:
    """The reader's CPU and wall time per read, ``count`` of each read one at a time."""
    redis = connect_redis(settings.redis)
    reader, board, rng = (
        RankReader(RedisProjection(redis, PREFIX), PREFIX, settings.region),
        board_of(settings, shards),
        random.Random(3),
    )
    reads = {
        "top(k: 10)": lambda: reader.top(board, 10),
        "player": lambda: reader.player(board, user_id(rng.randrange(players))),
        "context(4)": lambda: reader.context(board, user_id(rng.randrange(players)), 4),
    }
    costs = {}
    try:
        for label, read in reads.items():
            cost = await reader_cost(read, count)
            print(f"  {label:<29} reader CPU {cost.cpu_ms:.3f} ms a read, {cost.wall_ms:.3f} ms a read one at a time",
                  flush=True)  # fmt: skip
            costs[label] = {"cpu_ms": cost.cpu_ms, "wall_ms": cost.wall_ms}
    finally:
        await redis.aclose()
    return costs


async def reads(
    settings: Settings, players: int, rate: float, duration: float, shards: int, page_rank: int | None
) -> dict[str, dict[str, Any]]:
    """Paced reads through the gateway; the pages of 100 too unless ``page_rank`` is None."""
    board = board_of(settings, shards)
    apply_migrations(settings.cassandra)
    cluster, session = connect_cassandra(settings.cassandra)
    await CassandraCatalog(session).create(board)  # False when it exists: reads follow the Redis layout
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
    measured: dict[str, dict[str, Any]] = {}
    try:
        await paced("warm-up", port, queries["player"], 16, rate, 2)
        if page_rank is not None:
            pool = await cursors(port, BOARD, players, rng, 200)
            queries[f"page 100 from rank {page_rank:,}"] = lambda: post(port, PAGE_FROM % (BOARD, page_rank))
            queries["page 100 from a random rank"] = lambda: post(
                port, PAGE_FROM % (BOARD, rng.randrange(1, players))
            )
            queries["page 100 after a cursor"] = lambda: post(port, PAGE_AFTER % (BOARD, rng.choice(pool)))
        for label, make in queries.items():
            cpu = gateway.cpu_seconds()
            result = await paced(label, port, make, 16, rate, duration)
            cpu_ms = (gateway.cpu_seconds() - cpu) * 1000 / max(1, result.requests)
            print(result.line() + f"   gateway CPU {cpu_ms:.2f} ms a request", flush=True)
            measured[label] = {**result.figures(), "p99_ms": result.p99_ms, "gateway_cpu_ms": cpu_ms}
    finally:
        await stop(gateway)
    return measured


# ------------------------------------------------------------------ 7. the lifecycle's archive


async def archive(settings: Settings, shards: int, keep: bool) -> dict[str, float]:
    board = board_of(settings, shards)
    cassandra = settings.cassandra.model_copy(update={"keyspace": ARCHIVE_KEYSPACE})
    apply_migrations(cassandra)
    cluster, session = connect_cassandra(cassandra)
    redis = connect_redis(settings.redis)
    try:
        session.execute("TRUNCATE board_results", timeout=120)  # an interrupted archive starts over
        session.execute("TRUNCATE board_result_chunks", timeout=120)
        chunk_size = settings.lifecycle.chunk_size
        timed = await archive_timed(redis, PREFIX, CassandraResults(session), board, chunk_size)
        header = timed.archived.header
        print(f"   archived {header.player_count:,} players in {timed.seconds:,.1f} s "
              f"({header.player_count / timed.seconds:,.0f} players/s): {header.chunk_count:,} chunks of "
              f"{chunk_size:,} + 1 header in Cassandra")  # fmt: skip
        print(f"   read ranks {timed.first + 1:,}..{timed.first + timed.entries:,} of the archive in "
              f"{timed.page_ms:.0f} ms")  # fmt: skip
        return {"seconds": timed.seconds, "players": header.player_count, "chunks": header.chunk_count,
                "page_ms": timed.page_ms}  # fmt: skip
    finally:
        await redis.aclose()
        if not keep:
            session.execute(f"DROP KEYSPACE IF EXISTS {ARCHIVE_KEYSPACE}", timeout=120)
        cluster.shutdown()


# ------------------------------------------------------------------ main


def met(ok: bool) -> str:
    return "met" if ok else "MISSED"


async def run(args: argparse.Namespace) -> Figures | None:
    url = (
        f"redis+cluster://127.0.0.1:{CLUSTER_PORTS[0]}"
        if args.redis_cluster
        else f"redis://127.0.0.1:{REDIS_PORT}/0"
    )
    settings = settings_for(url)
    if args.clean:
        print(f"== deleting the benchmark's topics ({PREFIX}.*), its Redis servers and its state")
        await delete_topics(settings.kafka, f"{PREFIX}.")
        stop_redis()
        shutil.rmtree(STATE_DIR, ignore_errors=True)
        return None
    mode = f"{args.shards}-shards-{'cluster' if args.redis_cluster else 'standalone'}"
    state = State(args.players, mode, args.metadata_bytes)
    print(f"== 1. load: totals topic {settings.kafka.topic('totals')} (through the totals topic: see --help), "
          f"{args.metadata_bytes} bytes of metadata per player")  # fmt: skip
    await load(settings, args.players, args.metadata_bytes)
    ports = start_redis(args.redis_cluster)
    if state.data.get(f"redis-{ports[0]}", mode) != mode:  # another mode's board: start from empty servers
        print("   the benchmark's Redis holds another mode's board: emptying it")
        for port in ports:
            redis_cli(port, "flushall")
    state.data[f"redis-{ports[0]}"] = mode
    where = (
        f"a 3-master cluster ({', '.join(map(str, ports))})" if args.redis_cluster else f"Redis :{ports[0]}"
    )
    try:
        print(f"== 2. rebuild of the projection from the totals topic into {where}, {args.shards} shard(s)")
        await project(settings, state, args.players, args.shards, ports)
        used, empty = used_memory(ports), float(state.mode.get("empty_bytes", 0))
        per_member = (used - empty) / args.players
        # The target is for entries without metadata; metadata's cost is a figure of its own.
        target = "" if args.metadata_bytes else f" (target <= 130 B: {met(per_member <= 130)})"
        print(f"== 3. memory: {used / 2**20:,.0f} MiB used, {per_member:,.1f} B per member{target}")
        state.mode["bytes_per_member"] = per_member
        if args.memory_only:
            state.save()
            if not args.keep_redis:
                stop_redis()
            return figures_of(state, mode)
        if not state.done("ratio"):
            print("== 4. redis-benchmark: the same Lua script, one total per call, pipelined (-P 64)")
            reference = statistics.median(redis_benchmark(ports, 200_000) for _ in range(3))
            state.record("ratio", {"redis_benchmark": reference})
        reference, rebuild_rate = (
            float(state.mode["ratio"]["redis_benchmark"]),
            float(state.mode["rebuild"]["rate"]),
        )
        ratio = rebuild_rate / reference
        print(f"   rebuild {rebuild_rate:,.0f} totals/s, redis-benchmark {reference:,.0f} calls/s: {ratio:.2f}x "
              f"(target >= 0.4x: {met(ratio >= 0.4)})")  # fmt: skip
        print(f"== 5. the live projector's apply path: {args.apply:,} changed totals in batches of "
              f"{settings.projector.max_batch}")  # fmt: skip
        rate = await apply_rate(settings, args.players, args.apply)
        state.record("apply", {"rate": rate})
        print(f"   {rate:,.0f} totals/s applied")
        print(f"== 6. reads: the reader's cost, {args.reader_reads:,} reads of each one at a time")
        state.record(
            "reader_cost", await reader_costs(settings, args.players, args.shards, args.reader_reads)
        )
        print(f"   through the gateway, paced at {args.rate:.0f} q/s, {args.duration:.0f} s each")
        page_rank = None if args.no_pages else args.page_rank or max(1, args.players * 2 // 5)
        measured = await reads(settings, args.players, args.rate, args.duration, args.shards, page_rank)
        state.record("reads", measured)
        for label, figures in measured.items():
            value = float(figures["p99_ms"])
            print(f"   {label:29} p99 {value:6.1f} ms (target < 10 ms: {met(value < 10)})")
        if not args.no_archive:
            print(
                f"== 7. the lifecycle's archive of the standings into Cassandra (keyspace {ARCHIVE_KEYSPACE})"
            )
            state.record("archive", await archive(settings, args.shards, args.keep_archive))
        print(
            "== processor: not run by this benchmark (the board is loaded through the totals topic);"
            " ops/bench/restore measures its disk per player and its RSS, bounded by its store cache"
        )
    except BaseException:  # interrupted (a shell's time limit): what is in Redis lets a rerun resume
        print(f"== interrupted: the benchmark's Redis keeps what it holds; run again to resume ({where}), "
              "--clean to stop it and start over", flush=True)  # fmt: skip
        raise
    if not args.keep_redis:
        stop_redis()
    return figures_of(state, mode)


def figures_of(state: State, mode: str) -> Figures:
    """What the run records: every step's figures in this mode, those of earlier runs it resumed included."""
    return {"players": state.data["players"], "metadata_bytes": state.data["metadata_bytes"], "mode": mode,
            "steps": state.mode}  # fmt: skip


def main() -> None:
    p = parser(__doc__)
    p.add_argument(
        "--players", type=int, default=25_000_000, help="players on the board (default 25,000,000)"
    )
    p.add_argument("--rate", type=float, default=500, help="paced reads: requests per second (default 500)")
    p.add_argument("--duration", type=float, default=20, help="seconds per read run (default 20)")
    p.add_argument(
        "--page-rank", type=int, default=0, help="rank of the deep page (default: 40%% of the board)"
    )
    p.add_argument("--shards", type=int, default=1, help="the board's shards (default 1)")
    p.add_argument(
        "--reader-reads",
        type=int,
        default=2000,
        help="reads of each kind for the reader's cost (default 2,000)",
    )
    p.add_argument("--redis-cluster", action="store_true", help="a Redis Cluster of 3 masters of its own")
    p.add_argument("--apply", type=int, default=200_000, help="changed totals for the apply rate (200,000)")
    p.add_argument("--keep-redis", action="store_true", help="leave the benchmark's Redis running")
    p.add_argument(
        "--keep-archive", action="store_true", help=f"keep the archive's keyspace ({ARCHIVE_KEYSPACE})"
    )
    p.add_argument("--no-archive", action="store_true", help="leave out step 7 (the archive)")
    p.add_argument("--no-pages", action="store_true", help="leave the pages of 100 out of step 6")
    p.add_argument(
        "--metadata-bytes", type=int, default=0, help="bytes of award metadata per player (default 0: none)"
    )
    p.add_argument("--memory-only", action="store_true", help="stop after step 3 (the memory)")
    p.add_argument("--clean", action="store_true", help="delete the benchmark's topics, Redis and state")
    args = p.parse_args()
    if not args.clean:
        free = subprocess.run(["free", "-g"], capture_output=True, text=True).stdout.splitlines()[1].split()
        print(f"== {args.players:,} players on one board; memory now: {free[6]} GiB available of {free[1]} GiB "
              "(the board takes about 3.5 GiB of Redis at 25M players)")  # fmt: skip
    recorded("scale", args, lambda: uvloop.run(run(args)))


if __name__ == "__main__":
    main()
