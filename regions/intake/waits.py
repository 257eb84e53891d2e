"""Answers that wait for this region's projection (``?wait=applied``, rules in ``regions.core.waits``).

One watcher per intake process serves every waiting award: it runs only while awards wait, reads
the projection's positions every ``LB_INTAKE__APPLIED_POLL_MS``, and reads the players of every
award they cover in one pipelined batch (at most ``READ_BATCH`` a round); so the Redis calls per
second are bounded by the poll, not by the awards waiting. Each request waits on its own futures
with the event loop's timer for its deadline. The plain path never touches Redis.

Redis is connected on the first wait, never at start: an intake whose Redis is down starts and
accepts awards, and a wait then answers ``applied: null``.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from redis.exceptions import RedisClusterException, RedisError

from regions.core.boards import Board
from regions.core.positions import SourceKey
from regions.core.reads import BrokenProjection, RankedEntry
from regions.core.waits import Applied, AppliedWait, applied_of, covered_through, covers
from regions.runtime.logs import ThrottledLog
from regions.runtime.metrics import INTAKE_APPLIED
from regions.runtime.settings import Settings
from regions.stores.redis.connection import ProjectionRedis
from regions.stores.redis.layouts import LayoutMoved
from regions.stores.redis.projection import RedisProjection, connect_redis
from regions.stores.redis.reads import RankReader

log = logging.getLogger(__name__)
READ_BATCH = 1000  # the most waiting awards whose players one round reads
UNREADABLE = (RedisError, RedisClusterException, OSError, TimeoutError, LayoutMoved, BrokenProjection)
Player = tuple[Board, str]  # the board an award counts in (its period's, for a calendar window), the player


@dataclass(eq=False, slots=True)
class _Waiter:
    player: Player
    key: SourceKey  # (the accepting region, the award's partition)
    offset: int
    done: asyncio.Future[RankedEntry | None]


class _Waiting:
    """The waiters by (region, partition), each a heap by offset: a round takes those the positions
    cover without looking at the others. A waiter whose request stopped waiting stays until its
    offset is covered (or nothing waits any more), then is dropped."""

    def __init__(self) -> None:
        self._heaps: dict[SourceKey, list[tuple[int, int, _Waiter]]] = {}
        self._order = itertools.count()  # (equal offsets: a batch's awards in one partition)

    def add(self, waiters: Iterable[_Waiter]) -> None:
        for w in waiters:
            heapq.heappush(self._heaps.setdefault(w.key, []), (w.offset, next(self._order), w))

    def take(self, positions: Mapping[SourceKey, int], most: int) -> list[_Waiter]:
        """Up to ``most`` waiters still waiting whose offsets ``positions`` cover, lowest first."""
        taken: list[_Waiter] = []
        for key, heap in self._heaps.items():
            reach = covered_through(positions, key)
            while heap and heap[0][0] <= reach and len(taken) < most:
                waiter = heapq.heappop(heap)[2]
                if not waiter.done.done():
                    taken.append(waiter)
        return taken

    def clear(self) -> None:
        self._heaps.clear()


@dataclass(slots=True)
class PendingWait:
    """A request's wait, prepared before its awards are produced: the players' entries then
    (``before``, None when the projection could not be read: every answer is then null)."""

    deadline: float  # event loop time
    players: list[Player]
    before: list[RankedEntry | None] | None


class ProjectionWaits:
    """The intake process's waits for its region's projection."""

    def __init__(self, settings: Settings, connect: Callable[[], ProjectionRedis] | None = None) -> None:
        self._region, self._prefix = settings.region, settings.redis.key_prefix
        self._connect = connect or (lambda: connect_redis(settings.redis))
        self._poll_s = settings.intake.applied_poll_ms / 1000
        self._redis: ProjectionRedis | None = None
        self._reader: RankReader | None = None
        self._waiting = _Waiting()
        self._live = 0  # awards whose requests wait now
        self._watcher: asyncio.Task[None] | None = None
        self._errors = ThrottledLog(log)

    def _projection(self) -> RankReader:
        if self._reader is None:
            self._redis = self._connect()
            self._reader = RankReader(RedisProjection(self._redis, self._prefix), self._prefix, self._region)
        return self._reader

    async def prepare(self, wait: AppliedWait, players: list[Player]) -> PendingWait:
        """Read the players' entries before their awards are produced, within the wait's time."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait.timeout_ms / 1000
        try:
            before = await asyncio.wait_for(self._projection().entries(players), wait.timeout_ms / 1000)
        except UNREADABLE as exc:
            self._unreadable(exc)
            return PendingWait(deadline, players, None)
        return PendingWait(deadline, players, before)

    async def applied(
        self, pending: PendingWait, positions: Sequence[tuple[int, int]], regions: Sequence[str]
    ) -> list[Applied | None]:
        """Each award's ``applied`` once this region's projection covers it (acknowledged by
        ``regions`` at ``positions``: partition, offset; another region for a HOME_ROUTED board's award
        routed to its home, covered here once replicated), or None for those the deadline passed first."""
        if pending.before is None:
            INTAKE_APPLIED.labels("unreadable").inc(len(positions))
            return [None for _ in positions]
        loop = asyncio.get_running_loop()
        waiters = [
            _Waiter(player, (region, p), o, loop.create_future())
            for player, (p, o), region in zip(pending.players, positions, regions, strict=True)
        ]
        self._waiting.add(waiters)
        self._live += len(waiters)
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.create_task(self._watch())
        timeout = max(0.0, pending.deadline - loop.time())
        try:
            await asyncio.wait([w.done for w in waiters], timeout=timeout)
        finally:
            self._live -= len(waiters)
        answers = []
        for waiter, before in zip(waiters, pending.before, strict=True):
            done = waiter.done.done() and not waiter.done.cancelled()
            INTAKE_APPLIED.labels("applied" if done else "timeout").inc()
            answers.append(applied_of(before, waiter.done.result()) if done else None)
            waiter.done.cancel()
        return answers

    async def _watch(self) -> None:
        """Rounds while awards wait; a round that fails is logged and tried again a little later."""
        pause = self._poll_s
        while self._live:
            try:
                await asyncio.wait_for(self._round(), max(1.0, 100 * self._poll_s))
                pause = self._poll_s
            except UNREADABLE as exc:
                self._unreadable(exc)
                pause = min(0.1, pause * 2)
            await asyncio.sleep(pause)
        self._waiting.clear()  # (only waiters whose requests stopped waiting are left)

    async def _round(self) -> None:
        """Resolve every waiter the projection's positions cover with its player's entry, read in
        one batch; a waiter the batch's own asOf does not cover (the epoch changed) waits on."""
        reader = self._projection()
        positions = await reader.positions()
        claimed = reader.claimed(positions)
        if claimed.stale:
            return
        ready = self._waiting.take(claimed.positions, READ_BATCH)
        if not ready:
            return
        try:
            entries, as_of = await reader.entries_as_of([w.player for w in ready], positions)
        except BaseException:
            self._waiting.add(ready)
            raise
        again = []
        for waiter, entry in zip(ready, entries, strict=True):
            if not covers(as_of, waiter.key, waiter.offset):
                again.append(waiter)
            elif not waiter.done.done():
                waiter.done.set_result(entry)
        self._waiting.add(again)

    def _unreadable(self, exc: BaseException) -> None:
        self._errors.log(logging.WARNING, "redis", "the projection cannot be read for wait=applied (%r)", exc)

    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        if self._redis is not None:
            await self._redis.aclose()
