"""Who writes the projection, and which rebuild is under way: the write lease and the rebuild request,
both kept in Redis next to the projection.

One writer at a time: the running projector holds the lease and refreshes it; ``ops/lb rebuild``
asks that projector to rebuild (a request with its progress, in one hash), or, when no projector
holds the lease, takes it and rebuilds by itself, so a projector starting meanwhile waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import Self, cast

from redis.exceptions import RedisError

from regions.stores.redis.connection import ProjectionRedis
from schema.redis_keys import lease_key, rebuild_key
from schema.resources import lua_script

log = logging.getLogger(__name__)


class RebuildCause(StrEnum):
    LOST = "lost"  # Redis lost the projection: every read is stale until the rebuild completes
    REQUESTED = "requested"  # an operator asked; the live keys keep answering meanwhile
    RESHARD = "reshard"  # an operator asked for one board in another number of shards (a rebuild of it)


class RebuildState(StrEnum):
    PENDING = "pending"
    REPLAYING = "replaying"
    CATCHING_UP = "catching_up"
    VERIFYING = "verifying"  # a reshard compares every version of the old layout with the new one
    SWAPPING = "swapping"
    DONE = "done"


@dataclass(frozen=True, slots=True)
class RebuildRequest:
    """A rebuild and its progress. ``board`` empty: every board. The fresh keys are named by
    ``generation``; a rebuild resumed after a crash writes into the same ones. A reshard (cause
    RESHARD) rebuilds ``board`` into ``shards`` shards."""

    id: str
    cause: RebuildCause
    board: str
    generation: str
    state: RebuildState = RebuildState.PENDING
    done: int = 0  # totals offsets replayed
    total: int = 0
    boards: int = 0
    records: int = 0
    error: str = ""
    shards: int = 0  # a reshard's shard count (0: each board keeps its own)
    resume: str = ""  # while replaying: where the replay is, to resume an interrupted rebuild there
    verified: int = 0  # a reshard: the players of the old layout found at their version in the new one

    @classmethod
    def new(cls, cause: RebuildCause, board: str | None = None, shards: int = 0) -> RebuildRequest:
        return cls(uuid.uuid4().hex[:12], cause, board or "", uuid.uuid4().hex[:12], shards=shards)

    @property
    def active(self) -> bool:
        return self.state is not RebuildState.DONE

    def to(self, state: RebuildState, **changes: int | str) -> RebuildRequest:
        return replace(self, state=state, **changes)  # type: ignore[arg-type]

    def encoded(self) -> list[str]:
        """Field, value, field, value...: a hash's items."""
        return [x for f in fields(self) for x in (f.name, str(getattr(self, f.name)))]

    @classmethod
    def decoded(cls, raw: dict[str, str]) -> Self | None:
        """The request a hash holds; None when it is not a whole request (e.g. half written)."""
        try:
            return cls(
                raw["id"], RebuildCause(raw["cause"]), raw["board"], raw["generation"],
                RebuildState(raw["state"]), int(raw["done"]), int(raw["total"]), int(raw["boards"]),
                int(raw["records"]), raw["error"], int(raw.get("shards", "0")), raw.get("resume", ""), int(raw.get("verified", "0")),
            )  # fmt: skip
        except (KeyError, ValueError):
            return None


class LeaseLost(Exception):
    """Someone else holds the projection's write lease: this writer must stop writing."""


class ProjectionControl:
    def __init__(self, redis: ProjectionRedis, key_prefix: str) -> None:
        self._redis = redis
        self._lease = lease_key(key_prefix)
        self._rebuild = rebuild_key(key_prefix)
        self._hold = redis.register_script(lua_script("hold_lease"))
        self._replace = redis.register_script(lua_script("replace_hash"))
        self._record_unless_active = redis.register_script(lua_script("record_unless_active"))

    async def hold_lease(self, holder: str, ttl_s: float) -> bool:
        """Take or extend the lease for ``ttl_s``; False when another holder has it."""
        return bool(await self._hold(keys=[self._lease], args=[holder, max(1, int(ttl_s * 1000))]))

    async def release_lease(self, holder: str) -> None:
        await self._hold(keys=[self._lease], args=[holder, 0])

    async def lease_holder(self) -> str | None:
        return cast(str | None, await self._redis.get(self._lease))

    async def rebuild(self) -> RebuildRequest | None:
        raw = cast(dict[str, str], await self._redis.hgetall(self._rebuild))
        return RebuildRequest.decoded(raw) if raw else None

    async def put_rebuild(self, request: RebuildRequest) -> None:
        """Record the rebuild as a whole, replacing the previous one."""
        await self._replace(keys=[self._rebuild], args=request.encoded())

    async def ask_rebuild(self, wanted: RebuildRequest) -> RebuildRequest:
        """Record ``wanted`` unless a rebuild is already active; returns the one that is."""
        reply = cast(
            list[str],
            await self._record_unless_active(
                keys=[self._rebuild], args=[RebuildState.DONE.value, *wanted.encoded()]
            ),
        )
        current = RebuildRequest.decoded(dict(zip(reply[::2], reply[1::2], strict=True)))
        return wanted if current is None else current


class Lease:
    """The write lease as one holder keeps it: taken before writing, refreshed in the background
    every third of its time to live, checked before each step that moves positions, released at
    the end. A holder that cannot refresh in time (paused, cut off) stops writing."""

    def __init__(
        self,
        control: ProjectionControl,
        holder: str,
        ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._control = control
        self.holder = holder
        self._ttl = ttl_s
        self._clock = clock
        self._held_at: float | None = None
        self._keeper: asyncio.Task[None] | None = None

    async def try_acquire(self) -> bool:
        """Take the lease if it is free (or ours) and keep it refreshed; False when someone has it."""
        if not await self._refresh():
            return False
        self._keeper = asyncio.create_task(self._keep())
        return True

    async def acquire(self, stop: asyncio.Event, on_wait: Callable[[str | None], None]) -> bool:
        """Wait until the lease is ours (True) or ``stop`` is set (False); ``on_wait`` hears of
        each new holder we wait for."""
        seen: str | None = None
        while not await self.try_acquire():
            holder = await self._control.lease_holder()
            if holder != seen:
                seen = holder
                on_wait(holder)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), min(1.0, self._ttl / 3))
            if stop.is_set():
                return False
        return True

    async def _refresh(self) -> bool:
        asked = self._clock()
        if not await self._control.hold_lease(self.holder, self._ttl):
            return False
        self._held_at = asked
        return True

    async def _keep(self) -> None:
        while True:
            await asyncio.sleep(self._ttl / 3)
            try:
                if not await self._refresh():
                    log.error(
                        "the projection's write lease was taken by %s", await self._control.lease_holder()
                    )
                    self._held_at = None
                    return
            except RedisError as exc:
                log.warning("could not refresh the projection's write lease (%r)", exc)

    async def check(self) -> None:
        """Raise LeaseLost unless the lease is surely still ours (refreshing it when in doubt)."""
        held_at = self._held_at
        if held_at is not None and self._clock() - held_at < self._ttl / 2:
            return
        if held_at is None or not await self._refresh():
            self._held_at = None
            raise LeaseLost(f"{self.holder} no longer holds the projection's write lease")

    @property
    def held(self) -> bool:
        return self._held_at is not None

    async def release(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
        if self._held_at is not None:
            self._held_at = None
            with contextlib.suppress(RedisError, OSError):
                await self._control.release_lease(self.holder)
