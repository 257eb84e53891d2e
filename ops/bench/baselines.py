"""Baselines side by side (a script that prints figures, not a test).

On the same players, the same awards and the same machine, in one run:

- **naive Redis**: one sorted set, ``ZINCRBY`` per award, no dedupe, no versions; rank is
  ``ZREVRANK``, context ``ZREVRANK`` then ``ZREVRANGE``;
- **PostgreSQL**: a table ``scores(user_id primary key, score)`` with an index on
  ``(score desc, user_id)``; an award is ``UPDATE ... SET score = score + delta``; rank is an exact
  ``count(*)`` of the players ahead, context that count plus the four rows each side;
- **ours**: the processor's pure fold (``regions.core.aggregation.apply_award``: dedupe by event id,
  versioned totals) in this process, then the projector's versioned Lua apply
  (``RedisProjection.apply``), and the gateway's read path (``RankReader``: asOf positions,
  then the ``read_window`` script). Kafka, the intake and the gateway's HTTP layer are left out
  (``ops/bench/pipeline`` and ``ops/bench/reads`` measure them); what is compared is the store.

Every award is sent twice (its retry follows 500 awards later, as a client retrying after a lost
reply would), and the totals are checked against the awards' sum afterwards. Each figure is the
median of ``--rounds`` rounds; in each round the three systems run one after another in a rotating
order, so other load on the machine falls on all three. The naive and our Redis data live in a Redis
of their own that this script starts on a free port and stops; PostgreSQL is started by
``ops/services up postgres`` (run through ``ops/bench/baselines``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import uvloop
from redis.asyncio import Redis

from ops.bench.kit import closed_loop, cpu_seconds, parent_pid, parser, percentiles
from ops.bench.record import Figures, recorded
from ops.stack import free_port
from regions.core.aggregation import Applied, DedupeMemory, PlayerState, Seen, apply_award
from regions.core.boards import Board, SortOrder, TiePolicy
from regions.core.ordering import encode, total_of
from regions.core.positions import SourcePosition
from regions.stores.redis.connection import execute_pipeline
from regions.stores.redis.layouts import Layout
from regions.stores.redis.projection import ProjectedTotal, RedisProjection
from regions.stores.redis.reads import RankReader
from schema.records import AwardEvent

ROOT = Path(__file__).resolve().parents[2]
BOARD = Board("bench-baselines", "Baselines benchmark", "local",
              sort_order=SortOrder.DESC, tie_policy=TiePolicy.USER_ID)  # fmt: skip
PREFIX = "baselines"
NAIVE_KEY = "naive:board"
SYSTEMS = ("naive redis", "postgres", "ours")
RETRY_DISTANCE = 500  # a retry is sent this many awards after the original
CONTEXT = 4

PG_RANK = """
SELECT me.score,
       1 + (SELECT count(*) FROM scores WHERE score > me.score)
         + (SELECT count(*) FROM scores WHERE score = me.score AND user_id < me.user_id)
FROM scores me WHERE me.user_id = $1
"""
PG_AROUND = """
(SELECT user_id, score FROM scores WHERE score >= $2 AND (score > $2 OR user_id < $1)
 ORDER BY score ASC, user_id DESC LIMIT $3)
UNION ALL
(SELECT user_id, score FROM scores WHERE score <= $2 AND (score < $2 OR user_id > $1)
 ORDER BY score DESC, user_id ASC LIMIT $3)
"""


def user_id(i: int) -> str:
    return f"p{i:07d}"


def say(text: str) -> None:
    print(text, flush=True)


# ------------------------------------------------------------------ servers


@dataclass
class BenchRedis:
    """A Redis of this benchmark's own (no persistence), so the big loads leave the shared one alone."""

    port: int
    process: subprocess.Popen[bytes]
    folder: str

    @classmethod
    def start(cls) -> BenchRedis:
        port, folder = free_port(), tempfile.mkdtemp(prefix="lb-baselines-redis-")
        log = (ROOT / ".data" / "logs").resolve()
        log.mkdir(parents=True, exist_ok=True)
        with (log / "bench-baselines-redis.log").open("ab") as out:
            process = subprocess.Popen(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", folder,
                 "--save", "", "--appendonly", "no", "--protected-mode", "yes"],
                stdout=out, stderr=out,
            )  # fmt: skip
        return cls(port, process, folder)

    async def wait(self, redis: Redis) -> None:
        for _ in range(100):
            if self.process.poll() is not None:
                raise RuntimeError("the benchmark's Redis exited; see .data/logs/bench-baselines-redis.log")
            try:
                await redis.ping()
                return
            except OSError:
                await asyncio.sleep(0.1)
            except Exception as error:  # a ConnectionError of redis-py while it boots
                if "Connection" not in type(error).__name__:
                    raise
                await asyncio.sleep(0.1)
        raise TimeoutError("the benchmark's Redis did not start")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def postgres_pids(postmaster: int) -> list[int]:
    """The postmaster and its backends."""
    pids = [postmaster]
    for process in Path("/proc").glob("[0-9]*"):
        try:
            if parent_pid(int(process.name)) == postmaster:
                pids.append(int(process.name))
        except (OSError, ValueError, IndexError):
            continue
    return pids


def machine_load() -> str:
    """What else was running: load average and the busiest processes, for the record."""
    load = os.getloadavg()
    ps = subprocess.run(["ps", "-eo", "pcpu,comm", "--sort=-pcpu"], capture_output=True, text=True)
    busy = [" ".join(line.split()) for line in ps.stdout.splitlines()[1:6]]
    return f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; busiest: {', '.join(busy)}"


# ------------------------------------------------------------------ data


@dataclass(frozen=True, slots=True)
class Award:
    index: int  # the player's index
    amount: int
    event_id: str
    digest: str
    accepted_at_ms: int


def initial_totals(players: int) -> list[int]:
    rng = random.Random(7)
    return [rng.randrange(0, 10_000_000) for _ in range(players)]


def award_stream(rng: random.Random, players: int, unique: int, now_ms: int) -> list[Award]:
    """``unique`` awards to random players, each followed by its retry ``RETRY_DISTANCE`` later."""
    originals = []
    for n in range(unique):
        event_id, digest = f"{rng.getrandbits(128):032x}", f"{rng.getrandbits(64):016x}"
        originals.append(Award(rng.randrange(players), rng.randrange(1, 1000), event_id, digest, now_ms + n))
    stream: list[Award] = []
    for n, award in enumerate(originals):
        stream.append(award)
        if n >= RETRY_DISTANCE:
            first = originals[n - RETRY_DISTANCE]
            stream.append(
                Award(first.index, first.amount, first.event_id, first.digest, first.accepted_at_ms + 250)
            )
    for first in originals[max(0, unique - RETRY_DISTANCE) :]:
        stream.append(
            Award(first.index, first.amount, first.event_id, first.digest, first.accepted_at_ms + 250)
        )
    return stream


def chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


async def bulk(label: str, count: int, write: Callable[[int, int], Awaitable[None]]) -> None:
    """``write(start, end)`` over [0, count) in steps of 10,000, with progress every 500,000."""
    started, step = time.perf_counter(), 10_000
    for start in range(0, count, step):
        end = min(start + step, count)
        await write(start, end)
        if end % 500_000 == 0 or end == count:
            progress(label, end, count, started)


def progress(label: str, done: int, total: int, started: float) -> None:
    rate = done / max(time.perf_counter() - started, 1e-9)
    say(f"    {label}: {done:>9,} / {total:,} ({rate:,.0f}/s)")


# ------------------------------------------------------------------ the three systems


class Naive:
    name = "naive redis"

    def __init__(self, redis: Redis) -> None:
        self.redis = redis

    async def load(self, users: list[str], totals: list[int]) -> None:
        async def write(start: int, end: int) -> None:
            flat: list[str | int] = []
            for i in range(start, end):
                flat += (totals[i], users[i])
            await self.redis.execute_command("ZADD", NAIVE_KEY, *flat)  # type: ignore[no-untyped-call]

        await bulk("naive redis ZADD", len(users), write)

    async def awards(self, batch: Sequence[Award]) -> None:
        pipe = self.redis.pipeline(transaction=False)
        for award in batch:
            pipe.zincrby(NAIVE_KEY, award.amount, user_id(award.index))
        await execute_pipeline(pipe)

    async def rank(self, user: str) -> Any:
        pipe = self.redis.pipeline(transaction=False)
        pipe.zrevrank(NAIVE_KEY, user)
        pipe.zscore(NAIVE_KEY, user)
        return await execute_pipeline(pipe)

    async def context(self, user: str) -> Any:
        rank = int(await self.redis.zrevrank(NAIVE_KEY, user))  # type: ignore[arg-type]
        return await self.redis.zrevrange(NAIVE_KEY, max(0, rank - CONTEXT), rank + CONTEXT, withscores=True)

    async def totals(self, users: Sequence[int]) -> dict[int, int]:
        out: dict[int, int] = {}
        for part in chunks(users, 10_000):
            scores = await self.redis.zmscore(NAIVE_KEY, [user_id(i) for i in part])
            out.update({i: int(s) for i, s in zip(part, scores, strict=True) if s is not None})
        return out


class Postgres:
    name = "postgres"

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def load(self, users: list[str], totals: list[int]) -> None:
        async with self.pool.acquire() as conn:
            await conn.execute("DROP TABLE IF EXISTS scores")
            await conn.execute("CREATE TABLE scores (user_id text NOT NULL, score bigint NOT NULL)")
            started, step = time.perf_counter(), 250_000
            for start in range(0, len(totals), step):
                end = min(start + step, len(totals))
                await conn.copy_records_to_table(
                    "scores", records=((users[i], totals[i]) for i in range(start, end))
                )
                if end % 500_000 == 0 or end == len(totals):
                    progress("postgres COPY", end, len(totals), started)
            for label, sql in (
                ("primary key", "ALTER TABLE scores ADD PRIMARY KEY (user_id)"),
                ("rank index", "CREATE INDEX scores_rank ON scores (score DESC, user_id)"),
                ("vacuum analyze", "VACUUM ANALYZE scores"),
            ):
                began = time.perf_counter()
                await conn.execute(sql)
                say(f"    postgres {label}: {time.perf_counter() - began:.1f} s")

    async def awards(self, batch: Sequence[Award]) -> None:
        async with self.pool.acquire() as conn:
            await conn.executemany(
                "UPDATE scores SET score = score + $1 WHERE user_id = $2",
                [(a.amount, user_id(a.index)) for a in batch],
            )

    async def rank(self, user: str) -> Any:
        async with self.pool.acquire() as conn:
            return await conn.fetchrow(PG_RANK, user)

    async def context(self, user: str) -> Any:
        async with self.pool.acquire() as conn:
            row = await conn.fetchrow(PG_RANK, user)
            return row, await conn.fetch(PG_AROUND, user, row[0], CONTEXT)

    async def totals(self, users: Sequence[int]) -> dict[int, int]:
        out: dict[int, int] = {}
        async with self.pool.acquire() as conn:
            for part in chunks(users, 10_000):
                rows = await conn.fetch(
                    "SELECT user_id, score FROM scores WHERE user_id = ANY($1)", [user_id(i) for i in part]
                )
                out.update({int(r[0][1:]): int(r[1]) for r in rows})
        return out


@dataclass
class Ours:
    """The processor's fold and the projector's versioned apply, in one process; the gateway's reads."""

    redis: Redis
    initial: list[int]
    states: dict[int, PlayerState] = field(default_factory=dict)
    seen: dict[str, Seen] = field(default_factory=dict)
    duplicates: int = 0
    last_apply: list[ProjectedTotal] = field(default_factory=list)
    name: str = "ours"

    def __post_init__(self) -> None:
        self.projection = RedisProjection(self.redis, PREFIX)
        self.reader = RankReader(self.projection, PREFIX, BOARD.home_region)
        self.layout = Layout.new(BOARD.id, 1)
        self.keys = self.layout.shard(PREFIX, 0)
        self.memory = DedupeMemory(horizon_ms=24 * 3600 * 1000)

    async def load(self, users: list[str], totals: list[int]) -> None:
        """Writes, in bulk, exactly what the versioned apply leaves for a first total (version 1):
        the sorted set and the version buckets. (Through the Lua apply the load takes about 3x as
        long; a sample goes through it below, to check that both agree.)"""

        async def write(start: int, end: int) -> None:
            ranking: list[str | float] = []
            buckets: dict[str, list[str]] = {}
            for i in range(start, end):
                score, member = encode(BOARD.sort_order, BOARD.tie_policy, users[i], totals[i], "")
                ranking += (score, member)
                buckets.setdefault(self.keys.bucket(users[i]), []).extend((users[i], "1"))
            pipe = self.redis.pipeline(transaction=False)
            pipe.execute_command("ZADD", self.keys.ranking, *ranking)
            for bucket, records in buckets.items():
                pipe.execute_command("HSET", bucket, *records)
            await execute_pipeline(pipe)

        await self.projection.layouts.create([self.layout])
        await bulk("ours (sorted set + version buckets)", len(users), write)
        # The read path sees the bulk-written totals, and the Lua apply takes them as its own: the
        # same first totals sent through it again are already recorded.
        check = range(0, len(users), max(1, len(users) // 100))
        again = []
        for i in check:
            entry, _ = await self.reader.player(BOARD, users[i])
            if entry is None or (entry.score, entry.version) != (totals[i], 1):
                raise RuntimeError(f"the bulk load of {users[i]} reads as {entry}")
            score, member = encode(BOARD.sort_order, BOARD.tie_policy, users[i], totals[i], "")
            again.append(ProjectedTotal(users[i], 1, totals[i], score, member))
        if (await self.projection.apply(BOARD.id, again)).users:
            raise RuntimeError("the versioned apply took totals the bulk load had already recorded")
        await self.projection.start_epoch("baselines")
        now_ms = int(time.time() * 1000)
        await self.projection.advance(
            "baselines", {(BOARD.home_region, 0): SourcePosition(0, now_ms, now_ms)}
        )

    async def awards(self, batch: Sequence[Award]) -> None:
        changed: dict[int, PlayerState] = {}
        for a in batch:
            event = AwardEvent(
                event_id=a.event_id, digest=a.digest, board_id=BOARD.id, match_id="m", user_id=user_id(a.index),
                award_type="points", amount=a.amount, occurred_at_ms=None, region="local",
                accepted_at_ms=a.accepted_at_ms, aggregation="SUM", sort_order="DESC", tie_policy="USER_ID",
            )  # fmt: skip
            state = self.states.get(a.index) or PlayerState(self.initial[a.index], 1, "")
            outcome = apply_award(state, self.seen.get(a.event_id), event, self.memory)
            if isinstance(outcome, Applied):
                self.states[a.index] = changed[a.index] = outcome.state
                self.seen[a.event_id] = outcome.seen
            else:
                self.duplicates += 1
        totals = []
        for index, state in changed.items():
            score, member = encode(BOARD.sort_order, BOARD.tie_policy, user_id(index), state.total, "")
            totals.append(ProjectedTotal(user_id(index), state.version, state.total, score, member))
        if totals:
            await self.projection.apply(BOARD.id, totals)
            self.last_apply = totals

    async def rank(self, user: str) -> Any:
        return await self.reader.player(BOARD, user)

    async def context(self, user: str) -> Any:
        return await self.reader.context(BOARD, user, CONTEXT)

    async def totals(self, users: Sequence[int]) -> dict[int, int]:
        out: dict[int, int] = {}
        for part in chunks(users, 10_000):
            scores: list[float | None] = await self.redis.zmscore(
                self.keys.ranking, [user_id(i) for i in part]
            )
            out.update(
                {i: total_of(BOARD.sort_order, s) for i, s in zip(part, scores, strict=True) if s is not None}
            )
        return out

    async def replay_last_apply(self) -> int:
        """Apply the last batch of totals again, as a projector retrying after a lost reply does;
        the number of totals Redis took (the versions make it 0)."""
        applied = await self.projection.apply(BOARD.id, self.last_apply)
        return len(applied.users)


System = Naive | Postgres | Ours


# ------------------------------------------------------------------ measuring


@dataclass
class ReadRun:
    rate: float
    p50: float
    p95: float
    p99: float


async def reads(
    call: Callable[[str], Awaitable[Any]],
    players: int,
    concurrency: int,
    seconds: float,
    seed: int,
    at_least: int = 1,
) -> ReadRun:
    """Reads of random players in a closed loop for ``seconds``, and at least ``at_least`` of them
    (a PostgreSQL rank on a big board can take longer than the whole run); latencies in ms."""
    rng = random.Random(seed)
    run = await closed_loop(
        "", lambda _: call(user_id(rng.randrange(players))), concurrency, seconds, at_least
    )
    return ReadRun(run.rate, *percentiles(run.latencies, scale=1000).values())


@dataclass
class AwardRun:
    rate: float
    client_cpu_ms: float  # per award sent, this process
    server_cpu_ms: float  # per award sent, the store's processes


async def send_awards(system: System, stream: list[Award], batch: int, pids: list[int]) -> AwardRun:
    cpu_server, cpu_client = cpu_seconds(*pids), time.process_time()
    started = time.perf_counter()
    for part in chunks(stream, batch):
        await system.awards(part)
    elapsed = time.perf_counter() - started
    server = cpu_seconds(*pids) - cpu_server
    client = time.process_time() - cpu_client
    n = len(stream)
    return AwardRun(n / elapsed, client * 1000 / n, server * 1000 / n)


def median(values: list[float]) -> float:
    return statistics.median(values)


# ------------------------------------------------------------------ main


async def run(args: argparse.Namespace) -> Figures:
    say(f"== baselines: {args.players:,} players, {args.awards:,} awards a round each sent twice, "
        f"{args.rounds} rounds, reads {args.duration:.0f} s one at a time (latency) and "
        f"{args.duration:.0f} s at concurrency {args.concurrency} (throughput)")  # fmt: skip
    say(f"   machine: {os.cpu_count()} cores; {machine_load()}")
    bench_redis = BenchRedis.start()
    redis = Redis(host="127.0.0.1", port=bench_redis.port, decode_responses=True, max_connections=64)
    pool: asyncpg.Pool | None = None
    try:
        await bench_redis.wait(redis)
        pool = await asyncpg.create_pool(
            host="127.0.0.1", port=args.postgres_port, user="postgres", database="postgres",
            min_size=args.concurrency, max_size=args.concurrency,
        )  # fmt: skip
        postmaster = parent_pid(int(await pool.fetchval("SELECT pg_backend_pid()")))
        return await measure(args, bench_redis, redis, pool, postmaster)
    finally:
        if pool is not None:
            if not args.keep_postgres:
                await pool.execute("DROP TABLE IF EXISTS scores")
            await pool.close()
        await redis.aclose()
        bench_redis.stop()


async def measure(
    args: argparse.Namespace, bench_redis: BenchRedis, redis: Redis, pool: asyncpg.Pool, postmaster: int
) -> Figures:
    began = time.perf_counter()
    say("\n== loading the same initial totals into each")
    totals = initial_totals(args.players)
    users = [user_id(i) for i in range(args.players)]
    naive, postgres, ours = Naive(redis), Postgres(pool), Ours(redis, totals)
    systems: list[System] = [naive, postgres, ours]
    memory: dict[str, str] = {}
    memory_bytes: dict[str, int] = {}  # on disk for PostgreSQL, Redis used_memory for the others
    for system in systems:
        before = int((await redis.info("memory"))["used_memory"])
        started = time.perf_counter()
        await system.load(users, totals)
        seconds = time.perf_counter() - started
        if system is postgres:
            sizes = await pool.fetchrow(
                "SELECT pg_table_size('scores'), pg_relation_size('scores_pkey'), pg_relation_size('scores_rank')"
            )
            memory_bytes[system.name] = sum(sizes)
            memory[system.name] = (f"table {sizes[0] / 2**20:,.0f} MB + primary key {sizes[1] / 2**20:,.0f} MB "
                                   f"+ rank index {sizes[2] / 2**20:,.0f} MB = {sum(sizes) / args.players:.0f} B/player (on disk)")  # fmt: skip
        else:
            used = memory_bytes[system.name] = int((await redis.info("memory"))["used_memory"]) - before
            memory[system.name] = (
                f"{used / 2**20:,.0f} MB = {used / args.players:.0f} B/player (Redis used_memory)"
            )
        say(f"  {system.name}: loaded in {seconds:.1f} s; {memory[system.name]}")

    def pids_of(system: System) -> list[int]:
        return postgres_pids(postmaster) if system is postgres else [bench_redis.process.pid]

    rng = random.Random(13)
    expected: dict[int, int] = {}  # player -> sum of unique award amounts
    retried = 0  # points sent a second time
    award_runs: dict[str, list[AwardRun]] = {s.name: [] for s in systems}
    rank_runs: dict[str, list[ReadRun]] = {s.name: [] for s in systems}
    context_runs: dict[str, list[ReadRun]] = {s.name: [] for s in systems}
    for round_ in range(args.rounds):
        order = systems[round_ % 3 :] + systems[: round_ % 3]
        stream = award_stream(rng, args.players, args.awards, int(time.time() * 1000) + round_ * 10_000_000)
        seen_ids: set[str] = set()
        for award in stream:
            if award.event_id in seen_ids:
                retried += award.amount
            else:
                seen_ids.add(award.event_id)
                expected[award.index] = expected.get(award.index, 0) + award.amount
        say(
            f"\n== round {round_ + 1}/{args.rounds}: order {', '.join(s.name for s in order)}; {machine_load()}"
        )
        for system in order:
            run = await send_awards(system, stream, args.batch, pids_of(system))
            award_runs[system.name].append(run)
            say(f"  {system.name:<12} awards   {run.rate:>9,.0f}/s   CPU per award: this process "
                f"{run.client_cpu_ms:.3f} ms, server {run.server_cpu_ms:.3f} ms")  # fmt: skip
        for system in order:
            for label, runs, call in (
                ("rank", rank_runs, system.rank),
                ("context", context_runs, system.context),
            ):
                # Latency one request at a time (no queueing in this client), throughput with several.
                alone = await reads(call, args.players, 1, args.duration, seed=round_, at_least=5)
                loaded = await reads(call, args.players, args.concurrency, args.duration, seed=round_)
                read = ReadRun(loaded.rate, alone.p50, alone.p95, alone.p99)
                runs[system.name].append(read)
                say(f"  {system.name:<12} {label:<8} {read.rate:>9,.1f} q/s at c={args.concurrency}   one at a "
                    f"time: p50 {read.p50:7.2f} ms   p95 {read.p95:7.2f} ms   p99 {read.p99:7.2f} ms")  # fmt: skip

    say(f"\n== correctness under retries: {args.awards * args.rounds:,} awards, each sent twice "
        f"({retried:,} points sent a second time), {len(expected):,} players awarded")  # fmt: skip
    players = sorted(expected)
    correctness: dict[str, dict[str, int]] = {}
    for system in systems:
        got = await system.totals(players)
        wrong = [i for i in players if got.get(i) != totals[i] + expected[i]]
        surplus = sum(got.get(i, 0) - totals[i] - expected[i] for i in players)
        correctness[system.name] = {"wrong_totals": len(wrong), "excess_points": surplus}
        note = f"; {ours.duplicates:,} retries recognised as duplicates" if system is ours else ""
        say(f"  {system.name:<12} players with a wrong total {len(wrong):>8,} of {len(players):,}; "
            f"points counted in excess {surplus:>12,}{note}")  # fmt: skip
    taken = await ours.replay_last_apply()
    say(f"  ours: the projector's last apply ({len(ours.last_apply):,} totals) sent again -> {taken} taken "
        f"(versions already recorded)")  # fmt: skip

    say(f"\n== medians of {args.rounds} rounds ({args.players:,} players); read q/s at concurrency "
        f"{args.concurrency}, latency one request at a time")  # fmt: skip
    say(f"  {'':<12} {'awards/s':>10} {'rank q/s':>9} {'rank p50/p95/p99 ms':>22} {'context q/s':>12} "
        f"{'context p50/p95/p99 ms':>24}")  # fmt: skip
    for system in systems:
        a, r, c = award_runs[system.name], rank_runs[system.name], context_runs[system.name]
        say(f"  {system.name:<12} {median([x.rate for x in a]):>10,.0f} {median([x.rate for x in r]):>9,.1f} "
            f"{median([x.p50 for x in r]):>7.2f}/{median([x.p95 for x in r]):.2f}/{median([x.p99 for x in r]):.2f}"
            f"{'':>4}{median([x.rate for x in c]):>9,.1f} "
            f"{median([x.p50 for x in c]):>9.2f}/{median([x.p95 for x in c]):.2f}/{median([x.p99 for x in c]):.2f}")  # fmt: skip
    say("  ratios, ours / baseline (median of the per-round ratios):")
    for other in (naive, postgres):
        rates: dict[str, dict[str, list[float]]] = {
            "awards": {k: [x.rate for x in v] for k, v in award_runs.items()},
            "rank": {k: [x.rate for x in v] for k, v in rank_runs.items()},
            "context": {k: [x.rate for x in v] for k, v in context_runs.items()},
        }
        ratio = {
            label: median([o / b for o, b in zip(runs[ours.name], runs[other.name], strict=True)])
            for label, runs in rates.items()
        }
        say(f"    vs {other.name:<12} awards {ratio['awards']:.2f}x   rank {ratio['rank']:.2f}x   "
            f"context {ratio['context']:.2f}x")  # fmt: skip
    for system in systems:
        say(f"  memory {system.name:<12} {memory[system.name]}")
    say(f"  total time {time.perf_counter() - began:.0f} s")
    return {"systems": {s.name: {"awards": award_runs[s.name], "rank": rank_runs[s.name],
                                 "context": context_runs[s.name], "memory_bytes": memory_bytes[s.name],
                                 "correctness": correctness[s.name]} for s in systems},
            "retried_points": retried, "players_awarded": len(expected), "duplicates_recognised": ours.duplicates,
            "last_apply_sent_again_taken": taken}  # fmt: skip


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--players", type=int, default=1_000_000)
    p.add_argument("--awards", type=int, default=100_000, help="unique awards a round (each sent twice)")
    p.add_argument("--batch", type=int, default=1000, help="awards per round trip (pipeline/transaction)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=float, default=5, help="seconds per read run")
    p.add_argument("--concurrency", type=int, default=8, help="reads in flight for throughput")
    p.add_argument("--postgres-port", type=int, default=int(os.environ.get("LB_OPS_POSTGRES_PORT", "5433")))
    p.add_argument("--keep-postgres", action="store_true", help="leave the scores table behind")
    args = p.parse_args()
    recorded("baselines", args, lambda: uvloop.run(run(args)))


if __name__ == "__main__":
    main()
