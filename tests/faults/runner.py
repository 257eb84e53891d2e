"""Runs a fault schedule (``tests.faults.schedule``) against regions of a ``deploy`` fixture, records
the history, heals, drains and runs the checkers (``tests.faults.checkers``).

Phases, as Jepsen's: load and nemeses until the schedule's end (every nemesis is a task that undoes
its fault after its duration, in a ``finally``); heal all (links forward, every process running and
continued); wait for the racing senders; read the oracle (every accepted copy) from the regions'
awards topics; drain until every region matches it or ``drain_s`` passes; check.

Cassandra is reached by every process through one proxy (``cassandra_stop`` cuts it: connections
dropped, new ones refused, as a stopped server looks), and by each region's intake through a proxy of
its own (``stale_catalog`` cuts only that one while a board closes: the intake keeps serving the
board from its cached catalog answer). The shared Cassandra server itself is never stopped: the
whole suite runs on it and a restart takes minutes. A region process that exits by itself is
restarted, as a supervisor would, and listed in the report (``Run.supervise``). All traffic is to
127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import signal
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpx
from aiokafka import ConsumerRecord
from cassandra.cluster import Session

from regions.core.boards import Board, BoardStatus, SortOrder, TiePolicy
from regions.intake.client import AwardClient
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.results import CassandraResults
from schema.records import Codec
from tests.clusters import RegionServerPool, RegionServers, read_all
from tests.faults import checkers
from tests.faults.checkers import Attempt, Copy, Refused
from tests.faults.reads import Answer
from tests.faults.schedule import Kind, Step, counts
from tests.harness import Region
from tests.integration.regions.test_close import _cutoffs
from tests.multi_region import Deploy, Deployment
from tests.proxy import TcpProxy

HORIZON_S, MARGIN_S = 2, 2  # the shortened dedupe memory every region runs with (holds outlast it)
USERS = [f"p{i}" for i in range(8)]
RACE_USERS = [f"r{i}" for i in range(6)]
REGION_SERVICES = ("processor", "projector", "audit", "lifecycle", "intake")
CLIENT_TIMEOUT_S = 2.0
RETRY_BUDGET_S = 1.5  # an unknown outcome is retried in its region while within the dedupe horizon
RACE_CAP_S = 25.0  # a racing sender gives up this long after its board began closing
PROGRESS_EVERY_S = 30.0


@dataclass
class Links:
    """Proxies cut or black-holed by nemeses that may overlap: counted, healed by the last one."""

    depth: Counter[int] = field(default_factory=Counter)

    @contextlib.asynccontextmanager
    async def down(self, proxies: Sequence[TcpProxy], how: str, seconds: float) -> AsyncIterator[None]:
        """``proxies`` cut (``how="cut"``) or black-holed from entry to ``seconds`` after the body."""
        for p in proxies:
            self.depth[id(p)] += 1
            if how == "cut":
                p.cut()
            else:
                p.blackhole()
        try:
            yield
            await asyncio.sleep(seconds)
        finally:
            for p in proxies:
                self.depth[id(p)] -= 1
                if self.depth[id(p)] == 0:
                    p.heal()


@dataclass
class Run:
    """One run's deployment, what it drives, and what it recorded."""

    d: Deployment
    servers: dict[str, RegionServers]
    session: Session
    cassandra: TcpProxy
    intake_links: dict[str, TcpProxy]
    overrides: dict[str, dict[str, dict[str, str]]]  # region -> service -> env of that process
    boards: list[Board]
    clients: dict[str, AwardClient]
    attempts: list[Attempt] = field(default_factory=list)
    answers: dict[str, list[Answer]] = field(default_factory=dict)
    closing: list[Board] = field(default_factory=list)
    injected: list[Step] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # nemeses or reads that failed (not anomalies)
    links: Links = field(default_factory=Links)
    race_tasks: list[asyncio.Task[None]] = field(default_factory=list)
    drained_s: float = 0.0
    late: int = 0  # awards of closed boards reconciled as late: the barrier was raced
    exits: list[str] = field(default_factory=list)  # processes that exited by themselves
    matches: int = 0
    processes: int = 0
    progress: Path | None = None  # where ``note`` appends what the run is doing, for ops/faults to show
    began: float = field(default_factory=time.monotonic)

    def note(self, text: str) -> None:
        """Append ``text`` to the progress file (if any), with the run's elapsed time."""
        if self.progress is not None:
            with self.progress.open("a") as out:
                out.write(f"    [{_clock(time.monotonic() - self.began)}] {text}\n")

    @property
    def names(self) -> list[str]:
        return list(self.d.regions)

    # ---- load ----------------------------------------------------------------------------------

    def _match(self) -> str:
        self.matches += 1
        return f"m{self.matches}"

    async def _attempt(self, kind: str, region: str, board: str, awards: list[tuple[str, str, int]],
                       batch: bool) -> Attempt:  # fmt: skip
        bodies = [{"leaderboardId": board, "matchId": m, "userId": u, "awardType": "points", "delta": a}
                  for u, m, a in awards]  # fmt: skip
        payload = {"awards": bodies} if batch else bodies[0]
        self.processes += 1
        invoked, status, acks = time.monotonic(), None, ()
        try:
            response = await self.clients[region].send(payload)
            status = response.status_code
            if status == 202:
                acks = tuple((x["region"], x["partition"], x["offset"], x["eventId"])
                             for x in response.json()["accepted"])  # fmt: skip
        except (TimeoutError, httpx.HTTPError):
            pass
        outcome = "ok" if status == 202 else ("fail" if status is not None and status < 500 else "info")
        attempt = Attempt(len(self.attempts), self.processes, kind, region, board, tuple(awards), invoked,
                          time.monotonic(), outcome, status, acks)  # fmt: skip
        self.attempts.append(attempt)
        return attempt

    async def submit(self, kind: str, region: str, board: str, awards: list[tuple[str, str, int]],
                     batch: bool = False) -> Attempt:  # fmt: skip
        """As a game service does: an unknown outcome is retried with the same awards, in the same
        region, while the first try is younger than ``RETRY_BUDGET_S``."""
        first = time.monotonic()
        while True:
            attempt = await self._attempt(kind, region, board, awards, batch)
            if attempt.outcome != "info" or time.monotonic() - first > RETRY_BUDGET_S:
                return attempt
            await asyncio.sleep(0.1)

    async def load(self, step: Step, rng: random.Random) -> None:
        board = self.boards[int(step.value * 1000) % len(self.boards)].id
        user, amount = rng.choice(USERS), rng.randint(1, 20)
        if step.kind is Kind.AWARD:
            await self.submit(step.kind, step.region, board, [(user, self._match(), amount)])
        elif step.kind is Kind.BATCH:
            awards = [
                (rng.choice(USERS), self._match(), rng.randint(1, 20)) for _ in range(2 + int(step.value * 8))
            ]
            await self.submit(step.kind, step.region, board, awards, batch=True)
        elif step.kind is Kind.FAILOVER:
            award = [(user, self._match(), amount)]
            await self.submit(step.kind, step.region, board, award)
            await self.submit(step.kind, step.other, board, award)  # the client failed over
        else:  # a conflicting repeat: the same event id, another amount, another region
            match = self._match()
            await self.submit(step.kind, step.region, board, [(user, match, amount)])
            await asyncio.sleep(0.05)
            await self.submit(step.kind, step.other, board, [(user, match, amount + 1)])

    # ---- nemeses -------------------------------------------------------------------------------

    async def _restart(self, region: Region, service: str) -> None:
        await region.start(service, overrides=self.overrides[region.settings.region][service])

    async def nemesis(self, step: Step) -> None:
        region = self.d.regions[step.region]
        if step.kind is Kind.HOLD:
            links = [self.d.kafka_links[step.region], self.d.redis_links[step.region]]
            async with self.links.down(links, "blackhole", step.duration_s):
                pass
        elif step.kind is Kind.KILL:
            await self._kill(region, step)
        elif step.kind is Kind.PAUSE:
            await self._pause(region, step)
        elif step.kind is Kind.REDIS_WIPE:
            redis, prefix = region.projection.redis, region.settings.redis.key_prefix
            keys = [k async for k in redis.scan_iter(match=f"{prefix}:*", count=1000)]
            if keys:
                await redis.delete(*keys)
        elif step.kind is Kind.KAFKA_RESTART:
            servers = self.servers[step.region]
            await asyncio.to_thread(servers._services, "down", "kafka")
            try:
                await asyncio.sleep(step.duration_s)
            finally:
                await asyncio.to_thread(servers._services, "up", "kafka")
        elif step.kind is Kind.CASSANDRA_STOP:
            async with self.links.down([self.cassandra, *self.intake_links.values()], "cut", step.duration_s):
                pass
        elif step.kind is Kind.CLOSE_RACE:
            await self._race(step, home=step.region, stale=None)
        elif step.kind is Kind.STALE_CATALOG:
            await self._race(step, home=step.other, stale=step.region)

    async def _kill(self, region: Region, step: Step) -> None:
        if step.target == "replicator":
            replicator = self.d.replicators[(step.region, step.other)]
            await replicator.kill()
            await asyncio.sleep(step.duration_s)
            await replicator.start()
            return
        await region.kill(step.target)
        await asyncio.sleep(step.duration_s)
        await self._restart(region, step.target)

    async def _pause(self, region: Region, step: Step) -> None:
        def send(sig: signal.Signals) -> None:
            if step.target == "replicator":
                self.d.replicators[(step.region, step.other)].signal(sig)
            else:
                region.send_signal(step.target, sig)

        send(signal.SIGSTOP)
        try:
            await asyncio.sleep(step.duration_s)
        finally:
            send(signal.SIGCONT)

    async def _race(self, step: Step, home: str, stale: str | None) -> None:
        """A new board homed in ``home``; a sender in every region sends awards until its intake
        answers 409; the close begins ``value`` of the way through ``duration_s``. With ``stale``,
        that region's intake cannot read the catalog from just before the close to the end of the
        duration: it keeps accepting the board from its cached answer."""
        board = Board(f"race-{uuid.uuid4().hex[:8]}", "Racing the close", home, SortOrder.DESC,
                      tie_policy=TiePolicy.USER_ID)  # fmt: skip
        await self.d.regions[home].create_board(board)
        self.closing.append(board)
        rng = random.Random(step.value)
        closed_at: list[float] = []
        senders = [asyncio.create_task(self._send_until_refused(board, name, random.Random(rng.random()),
                                                                closed_at)) for name in self.names]  # fmt: skip
        await asyncio.sleep(0.5)  # every intake has read the board now
        before = max(0.1, step.value * step.duration_s - 0.5)
        links = [self.intake_links[stale]] if stale else []
        async with self.links.down(links, "cut", step.duration_s - before):
            await asyncio.sleep(before)
            lifecycle = CassandraLifecycle(self.session)
            await lifecycle.begin_close(board.id, f"{step.kind} at {step.at_s}s", datetime.now(UTC))
            closed_at.append(time.monotonic())
        self.race_tasks.extend(senders)

    async def _send_until_refused(
        self, board: Board, region: str, rng: random.Random, closed_at: list[float]
    ) -> None:
        while not closed_at or time.monotonic() - closed_at[0] < RACE_CAP_S:
            award = [(rng.choice(RACE_USERS), self._match(), rng.randint(1, 50))]
            attempt = await self.submit("close_race", region, board.id, award)
            if attempt.status == 409:
                return
            await asyncio.sleep(rng.uniform(0.02, 0.1))

    # ---- reads ---------------------------------------------------------------------------------

    async def read(self, stop: asyncio.Event) -> None:
        """Every region's top of every main board, over and over, into ``answers``."""
        while not stop.is_set():
            for name in self.names:
                for board in self.boards:
                    asked = time.monotonic()
                    try:
                        page = await asyncio.wait_for(self.d.readers[name].top(board, 100), 5)
                    except Exception as exc:  # a read during a Redis wipe may fail: it claims nothing
                        self.errors.append(f"read of {board.id} in {name}: {type(exc).__name__}")
                        continue
                    positions = {self.position(r, p): o for (r, p), o in page.as_of.positions.items()}
                    shown = {e.user_id: (e.score, e.version) for e in page.entries}
                    self.answers.setdefault(f"{name}:{board.id}", []).append(
                        Answer(
                            f"top({board.id})",
                            asked,
                            time.monotonic(),
                            page.as_of.stale,
                            positions,
                            shown,
                            None,
                        )
                    )
            await asyncio.sleep(0.3)

    def position(self, region: str, partition: int) -> int:
        return checkers.encode_position(self.names, self.partitions, region, partition)

    @property
    def partitions(self) -> int:
        return next(iter(self.d.regions.values())).settings.kafka.partitions

    # ---- the phases ----------------------------------------------------------------------------

    async def supervise(self, stop: asyncio.Event) -> None:
        """Restart a region process that exited by itself (not killed by a nemesis), as ops/run or
        Kubernetes would, and record it: a process that dies of a fault is worth knowing."""
        while not stop.is_set():
            for name, region in self.d.regions.items():
                for service, process in list(region.processes.items()):
                    if process.returncode is not None and region.processes.get(service) is process:
                        self.exits.append(f"{name}/{service} exited by itself with {process.returncode}: "
                                          f"{_last_error(region.tail(service, 60))}")  # fmt: skip
                        region.processes.pop(service)
                        with contextlib.suppress(Exception):
                            await self._restart(region, service)
            await asyncio.sleep(0.5)

    async def execute(self, steps: Sequence[Step], seed: int) -> None:
        """Every step at its time; returns once every nemesis has undone its fault."""
        rng, start, tasks = random.Random(f"{seed}:awards"), time.monotonic(), []
        stop = asyncio.Event()
        reader = asyncio.create_task(self.read(stop))
        supervisor = asyncio.create_task(self.supervise(stop))
        end_s = max((step.at_s + step.duration_s for step in steps), default=0.0)
        reporter = asyncio.create_task(self._report_every(PROGRESS_EVERY_S, start, end_s, stop))
        for step in steps:
            delay = start + step.at_s - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(self._guarded(step, rng)))
        results = await asyncio.gather(*tasks, return_exceptions=True)
        self.errors += [f"{type(r).__name__}: {r}" for r in results if isinstance(r, BaseException)]
        self.note(f"schedule done: {self._tally()}; healing every link and process")
        await self.heal()
        await asyncio.gather(*self.race_tasks, return_exceptions=True)
        await asyncio.sleep(1.0)
        stop.set()
        await reader
        await supervisor
        await reporter

    async def _report_every(self, every_s: float, start: float, end_s: float, stop: asyncio.Event) -> None:
        """A progress line every ``every_s`` until the schedule's faults and load have ended."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every_s)
            if not stop.is_set():
                self.note(f"{_clock(time.monotonic() - start)} of {_clock(end_s)} of schedule: {self._tally()}")

    def _tally(self) -> str:
        outcomes = Counter(a.outcome for a in self.attempts)
        return (f"{len(self.injected)} faults injected, requests "
                + ", ".join(f"{k} {n}" for k, n in sorted(outcomes.items())))  # fmt: skip

    async def _guarded(self, step: Step, rng: random.Random) -> None:
        if step.is_load:
            await self.load(step, rng)
            return
        self.injected.append(step)
        self.note(f"fault: {step.describe()}")
        try:
            await asyncio.wait_for(self.nemesis(step), step.duration_s + 90)
        except Exception as exc:
            self.errors.append(f"{step.describe()}: {type(exc).__name__}: {exc}")

    async def heal(self) -> None:
        """Every link forwards, every process runs and is continued, every replicator runs."""
        for link in (*self.d.kafka_links.values(), *self.d.redis_links.values(), self.cassandra,
                     *self.intake_links.values()):  # fmt: skip
            link.heal()
        for name, region in self.d.regions.items():
            for service in REGION_SERVICES:
                process = region.processes.get(service)
                if process is None or process.returncode is not None:
                    region.processes.pop(service, None)
                    await self._restart(region, service)
                else:
                    process.send_signal(signal.SIGCONT)
            for (into, _), replicator in self.d.replicators.items():
                if into == name:
                    if replicator.process is None or replicator.process.returncode is not None:
                        await replicator.start()
                    else:
                        replicator.signal(signal.SIGCONT)

    # ---- what the regions hold -----------------------------------------------------------------

    async def copies(self) -> list[Copy]:
        codec, found = Codec(), []
        for name, region in self.d.regions.items():
            k = region.settings.kafka
            records: list[ConsumerRecord] = await read_all(k, k.topic("awards"), k.partitions)
            for r in records:
                if r.key is None or r.key.startswith(b"\x00"):
                    continue
                with contextlib.suppress(Exception):
                    a = codec.award(r.value)
                    found.append(Copy(a.event_id, a.digest, a.board_id, a.user_id, a.match_id, a.amount, name,
                                      a.accepted_at_ms, r.partition, r.offset))  # fmt: skip
        return found

    async def totals(self, fold: checkers.Fold) -> dict[str, dict[checkers.PlayerKey, int | None]]:
        found: dict[str, dict[checkers.PlayerKey, int | None]] = {}
        for name in self.names:
            mine: dict[checkers.PlayerKey, int | None] = {}
            for board in self.boards:
                page = await self.d.readers[name].top(board, 1000)
                mine |= {(board.id, e.user_id): e.score for e in page.entries}
            for key in fold.bounds:
                if key not in mine:
                    mine[key] = await self.d.regions[name].total_of(*key)
            found[name] = mine
        return found

    async def standings(self) -> dict[str, dict[str, list[checkers.Standing]]]:
        return {name: {b.id: [(e.rank, e.user_id, e.score) for e in (await self.d.readers[name].top(b, 1000)).entries]
                       for b in self.boards} for name in self.names}  # fmt: skip

    async def refused(self) -> dict[str, list[Refused]]:
        return {name: [Refused(r.reason, r.award.board_id, r.award.event_id, r.award.digest, r.award.region)
                       for r in await region.reconciliation() if r.award is not None]
                for name, region in self.d.regions.items()}  # fmt: skip

    async def closed(self, board: Board) -> bool:
        record = await CassandraLifecycle(self.session).record(board.id)
        return record is not None and record.board.status is BoardStatus.CLOSED

    async def archive(self, board: Board) -> list[tuple[str, int, int]] | None:
        results = CassandraResults(self.session)
        header = await results.get(board.id, 1)
        if header is None:
            return None
        chunks = await results.chunks(board.id, 1, range(header.chunk_count))
        return [(e.user_id, e.score, e.version) for n in sorted(chunks) for e in chunks[n]]


def _clock(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}:{rest:02d}"


def _last_error(tail: str) -> str:
    """The log's last line: a process that died of an exception ends with it."""
    lines = [line for line in tail.splitlines() if line.strip()]
    return (lines or ["(no log)"])[-1][:240]


def _exit_kind(exit: str) -> str:
    """``service: ExceptionType`` of an exit recorded by ``Run.supervise``."""
    where, _, last = exit.partition(" exited by itself with ")
    error = last.partition(": ")[2].partition(":")[0]
    return f"{where.split('/')[-1]}: {error or 'no exception logged'}"


@dataclass
class Report:
    """What a run injected and found, and its history."""

    seed: int
    faults: dict[str, int]
    anomalies: dict[str, list[str]]
    errors: list[str]
    exits: list[str]
    late: int
    attempts: Counter[str]
    seconds: dict[str, float]

    def table(self) -> str:
        lines = [f"fault schedule seed {self.seed}: requests {dict(self.attempts)}; {self.late} late award(s) "
                 "of closed boards reconciled",
                 f"phases (s): {', '.join(f'{k} {v:.0f}' for k, v in self.seconds.items())}", "",
                 f"{'fault injected':<28} {'count':>5}", f"{'-' * 28} {'-' * 5}"]  # fmt: skip
        lines += [f"{kind:<28} {n:>5}" for kind, n in self.faults.items()]
        lines += ["", f"{'checker':<14} {'anomalies':>9}  first example", f"{'-' * 14} {'-' * 9}  {'-' * 13}"]
        for name in checkers.CHECKERS:
            found = self.anomalies.get(name, [])
            lines.append(f"{name:<14} {len(found):>9}  {found[0][:160] if found else '-'}")
        if self.exits:
            kinds = Counter(_exit_kind(e) for e in self.exits)
            lines += ["", f"processes that exited by themselves (restarted): {len(self.exits)}"]
            lines += [f"  {n} x {kind}" for kind, n in kinds.most_common()]
            lines += [f"  first: {self.exits[0][:300]}"]
        if self.errors:
            lines += ["", f"nemesis/read errors ({len(self.errors)}; not anomalies): {self.errors[:3]}"]
        return "\n".join(lines)

    @property
    def found(self) -> int:
        return sum(len(v) for v in self.anomalies.values())


async def check(run: Run, drain_s: float) -> dict[str, list[str]]:
    """Drain until every region matches the oracle (or ``drain_s`` passed), then every checker."""
    copies = await run.copies()
    main = {b.id for b in run.boards}
    fold = checkers.fold([c for c in copies if c.board in main], HORIZON_S * 1000)
    acked = [(r, p, o) for a in run.attempts for r, p, o, _ in a.acks]

    pending: list[str] = []

    async def settled() -> bool:
        try:
            pending[:] = checkers.check_exactly_once(fold, await run.totals(fold), None, main)
            for board in run.closing:
                if not await run.closed(board):
                    pending.append(f"{board.id} not CLOSED")
            pending.extend(await _uncovered(run, acked))
            pending.extend(checkers.check_agreement(await run.standings()))
        except Exception as exc:  # a region still recovering: not settled yet
            pending[:] = [f"{type(exc).__name__}: {exc}"]
        if pending:
            await asyncio.sleep(1.0)
        return not pending

    run.note(f"draining: waiting (at most {drain_s:.0f} s) for every region to match the {len(copies)} accepted copies")
    began = time.monotonic()
    try:
        await Region.wait_until(settled, drain_s, "every region matching the oracle")
    except TimeoutError:
        run.errors.append(f"not drained within {drain_s:.0f}s: {len(pending)} pending, e.g. {pending[:1]}")
    run.drained_s = time.monotonic() - began
    run.note(f"drained in {run.drained_s:.0f} s; running the checkers")
    await asyncio.sleep(1.0)
    found: dict[str, list[str]] = {}
    found["lost"] = checkers.check_lost(run.attempts, copies)
    found["exactly_once"] = checkers.check_exactly_once(
        fold, await run.totals(fold), await run.refused(), main
    )
    found["agreement"] = checkers.check_agreement(await run.standings())
    acked_by_board = checkers.acked_once(run.attempts, copies, run.names, run.partitions)
    as_of = checkers.check_as_of(acked_by_board, run.answers)
    found["as_of"] = as_of + await _uncovered(run, acked)
    found["close"] = await _close_problems(run, copies)
    return found


async def _uncovered(run: Run, acked: list[tuple[str, int, int]]) -> list[str]:
    problems = []
    for name, region in run.d.regions.items():
        positions = (await region.projection.positions()).offsets
        newest: dict[tuple[str, int], int] = {}
        for r, p, o in acked:
            newest[(r, p)] = max(newest.get((r, p), -1), o)
        problems += [f"{name}: after the drain asOf {key} is {positions.get(key)}, acknowledged {o}"
                     for key, o in sorted(newest.items()) if positions.get(key, -1) < o]  # fmt: skip
    return problems


async def _close_problems(run: Run, copies: list[Copy]) -> list[str]:
    problems = []
    refused = await run.refused()
    for board in run.closing:
        cutoffs = {n: await _cutoffs(r.settings, board.id) for n, r in run.d.regions.items()}
        late = {r.event_id for r in refused[board.home_region] if r.reason == "late" and r.board == board.id}
        problems += checkers.check_close(board, await run.closed(board), await run.archive(board), copies, cutoffs,
                                         late, run.names, run.partitions)  # fmt: skip
        run.late += len(late)
    return problems


def write_history(path: Path, seed: int, steps: Sequence[Step], run: Run) -> None:
    """The schedule as the header, then one line per request (JSONL): replayable by seed."""
    with path.open("w") as out:
        out.write(json.dumps({"seed": seed, "schedule": [asdict(s) for s in steps]}) + "\n")
        for a in run.attempts:
            out.write(json.dumps(asdict(a)) + "\n")


# ---- setting up ----------------------------------------------------------------------------------

COMMON_ENV = {
    "LB_PROCESSOR__DEDUPE_HORIZON_S": str(HORIZON_S),
    "LB_PROCESSOR__DEDUPE_RETENTION_MARGIN_S": str(MARGIN_S),
    "LB_LIFECYCLE__MARKER_DELAY_S": "0",  # awards a stale intake accepts after the close are late
    "LB_LIFECYCLE__POLL_INTERVAL_S": "0.2",
    "LB_INTAKE__CATALOG_TTL_S": "1",
    "LB_CASSANDRA__REQUEST_TIMEOUT_S": "1",
    "LB_KAFKA__DELIVERY_TIMEOUT_S": "5",
}


async def start_run(
    deploy: Deploy,
    pool: RegionServerPool,
    session: Session,
    names: Sequence[str],
    cassandra: tuple[str, int],
    faults: dict[str, dict[str, str]] | None = None,
) -> Run:
    """Regions ``names`` with every process (and the lifecycle worker) on the shortened dedupe
    memory, Cassandra through proxies; ``faults``: extra env of one region's processes (the negative
    controls' fault flags)."""
    cassandra_link = TcpProxy(*cassandra)
    await cassandra_link.start()
    intake_links = {n: TcpProxy(*cassandra) for n in names}
    for link in intake_links.values():
        await link.start()
    env = {**COMMON_ENV, "LB_CASSANDRA__PORT": str(cassandra_link.port)}
    d = await deploy(list(names), services=(), env=env)
    overrides = {n: {s: {**(faults or {}).get(n, {})} for s in REGION_SERVICES} for n in names}
    for n in names:
        overrides[n]["intake"]["LB_CASSANDRA__PORT"] = str(intake_links[n].port)
    await asyncio.gather(*(_start_region(d.regions[n], overrides[n]) for n in names))
    servers = dict(zip(names, await pool.get(*names), strict=True))
    boards = [Board(f"fs-sum-{uuid.uuid4().hex[:6]}", "Faults (sum)", names[0], SortOrder.DESC,
                    tie_policy=TiePolicy.USER_ID),
              Board(f"fs-first-{uuid.uuid4().hex[:6]}", "Faults (first reached)", names[-1], SortOrder.DESC,
                    tie_policy=TiePolicy.FIRST_REACHED)]  # fmt: skip
    for board in boards:
        await d.regions[board.home_region].create_board(board)
    clients = {n: AwardClient(r.intake_url, timeout_s=CLIENT_TIMEOUT_S) for n, r in d.regions.items()}
    return Run(d, servers, session, cassandra_link, intake_links, overrides, boards, clients)


async def _start_region(region: Region, overrides: dict[str, dict[str, str]]) -> None:
    for service in REGION_SERVICES:
        await region.start(service, overrides=overrides[service])


async def stop_run(run: Run) -> None:
    for client in run.clients.values():
        await client.aclose()
    for link in (run.cassandra, *run.intake_links.values()):
        await link.close()


async def run_schedule(run: Run, steps: Sequence[Step], seed: int, drain_s: float) -> Report:
    began = time.monotonic()
    await run.execute(steps, seed)
    faulted = time.monotonic()
    anomalies = await check(run, drain_s)
    return Report(seed, counts(run.injected), anomalies, run.errors, run.exits, run.late, Counter(a.outcome for a in run.attempts),
                  {"faults": faulted - began, "drain": run.drained_s,
                   "drain+check": time.monotonic() - faulted})  # fmt: skip
