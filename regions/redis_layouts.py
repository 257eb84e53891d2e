"""Where a board's projection lives in Redis: its layout (a generation of keys and a shard count).

A board's layout pointer (``BoardKeys.layout``: generation, shards) names its live keys. Each shard
of a layout has a state key in the shard's own slot, ``building`` while a rebuild or a reshard fills
it and ``live`` once it is swapped in; the apply and read scripts check it in the same atomic step
as their work, so a write or a read with an outdated layout is refused (``moved``) and the caller
reads the pointer again, never applying out of order nor answering from keys being deleted.

A swap, made only while nothing else writes the board (the live projector is paused), marks the
fresh shards live, points the board at them, and then takes the state of the old shards away; the
old keys are recorded as retired and deleted afterwards, a few at a time, in the background.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import cast

from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.exceptions import RedisError

from regions.redis_connection import ProjectionRedis, execute_pipeline
from schema.redis_keys import (
    LISTPACK_ENTRIES,
    LISTPACK_VALUE,
    ShardKeys,
    board_keys,
    retired_key,
    shard_keys,
)

log = logging.getLogger(__name__)
LIVE, BUILDING = "live", "building"
LEGACY = "legacy"  # the generation that names an earlier key layout's ranking and records
DELETE_BATCH = 512  # keys per UNLINK while deleting a retired layout


class LayoutMoved(Exception):
    """The board's layout changed (or vanished) under a write; the message names the board."""


@dataclass(frozen=True, slots=True)
class Layout:
    """A generation of a board's keys, laid out over ``shards`` shards."""

    board_id: str
    generation: str
    shards: int

    @classmethod
    def new(cls, board_id: str, shards: int, generation: str | None = None) -> Layout:
        return cls(board_id, generation or uuid.uuid4().hex[:8], shards)

    def shard(self, prefix: str, shard: int) -> ShardKeys:
        return shard_keys(prefix, self.board_id, self.generation, shard)

    def shard_keys(self, prefix: str) -> list[ShardKeys]:
        return [self.shard(prefix, s) for s in range(self.shards)]

    def encoded(self) -> str:
        return f"{self.board_id}\t{self.generation}\t{self.shards}"

    @classmethod
    def decoded(cls, raw: str) -> Layout:
        board_id, generation, shards = raw.split("\t")
        return cls(board_id, generation, int(shards))


class Layouts:
    """The live layouts of a projection's boards, cached: a cached layout stays right until a
    script answers ``moved``, and then the caller ``forget``s it and looks again."""

    def __init__(self, redis: ProjectionRedis, prefix: str) -> None:
        self._redis = redis
        self._prefix = prefix
        self._live: dict[str, Layout] = {}

    def forget(self, board_id: str | None = None) -> None:
        """Drop one board's cached layout, or every board's (the projection was lost)."""
        if board_id is None:
            self._live.clear()
        else:
            self._live.pop(board_id, None)

    async def live(self, board_ids: Iterable[str]) -> dict[str, Layout | None]:
        """The live layout of each board (None: the board has none yet), read in one round trip
        for the boards not cached."""
        wanted = list(dict.fromkeys(board_ids))
        missing = [b for b in wanted if b not in self._live]
        if missing:
            pipe = self._redis.pipeline(transaction=False)
            for board_id in missing:
                pipe.hmget(board_keys(self._prefix, board_id).layout, ["generation", "shards"])
            for board_id, (generation, shards) in zip(missing, await execute_pipeline(pipe), strict=True):
                if generation and shards:
                    self._live[board_id] = Layout(board_id, generation, int(shards))
        return {b: self._live.get(b) for b in wanted}

    async def live_one(self, board_id: str) -> Layout | None:
        return (await self.live([board_id]))[board_id]

    async def create(self, layouts: Sequence[Layout]) -> None:
        """Make new boards' first layouts live (nobody reads or writes them yet)."""
        await self._set_states([k.state for layout in layouts for k in layout.shard_keys(self._prefix)], LIVE)
        pipe = self._redis.pipeline(transaction=False)
        for layout in layouts:
            pipe.hset(board_keys(self._prefix, layout.board_id).layout,
                      mapping={"generation": layout.generation, "shards": layout.shards})  # fmt: skip
        await execute_pipeline(pipe)
        self._live.update({layout.board_id: layout for layout in layouts})

    async def prepare(self, layouts: Sequence[Layout]) -> None:
        """Mark fresh layouts as being built (a rebuild resumed after a crash finds them so)."""
        pipe = self._redis.pipeline(transaction=False)
        for layout in layouts:
            for keys in layout.shard_keys(self._prefix):
                pipe.set(keys.state, BUILDING, nx=True)
        await execute_pipeline(pipe)

    async def _set_states(self, keys: Sequence[str], state: str) -> None:
        pipe = self._redis.pipeline(transaction=False)
        for key in keys:
            pipe.set(key, state)
        await execute_pipeline(pipe)

    async def swap(self, fresh: Layout) -> Layout | None:
        """Make ``fresh`` the board's live layout in one step for readers (the pointer), after which
        the old layout's scripts answer ``moved``; returns the old layout, now retired. Call it only
        while nothing else writes the board."""
        prefix, board = self._prefix, board_keys(self._prefix, fresh.board_id)
        self._live.pop(fresh.board_id, None)
        old = await self.live_one(fresh.board_id)
        if old == fresh:  # swapped in already (a rebuild resumed after its swap began)
            return None
        await self._set_states([k.state for k in fresh.shard_keys(prefix)], LIVE)
        await self._redis.hset(board.layout, mapping={"generation": fresh.generation, "shards": fresh.shards})
        self._live[fresh.board_id] = fresh
        retired = [old] if old is not None else []
        if await self._redis.exists(board.legacy[0], board.legacy[1]):
            retired.append(Layout(fresh.board_id, LEGACY, 1))
        if retired:
            await self._redis.sadd(retired_key(prefix), *(layout.encoded() for layout in retired))
            await self._redis.delete(*(k.state for layout in retired for k in layout.shard_keys(prefix)))
        return old

    async def discard(self, layout: Layout) -> None:
        """A fresh layout that will not be swapped in (a reshard refused): delete it in the background."""
        await self._redis.sadd(retired_key(self._prefix), layout.encoded())
        await self._redis.delete(*(k.state for k in layout.shard_keys(self._prefix)))

    async def retired(self) -> list[Layout]:
        members = cast(set[str], await self._redis.smembers(retired_key(self._prefix)))
        return [Layout.decoded(m) for m in sorted(members)]

    async def delete_retired(self, pause_s: float = 0.0) -> int:
        """Delete every retired layout's keys, DELETE_BATCH keys per command with ``pause_s`` between
        commands (Redis frees big values in the background: UNLINK); returns the layouts deleted."""
        done = 0
        for layout in await self.retired():
            for batch in self._keys_of(layout):
                await self._redis.unlink(*batch)
                await asyncio.sleep(pause_s)
            await self._redis.srem(retired_key(self._prefix), layout.encoded())
            done += 1
        return done

    def _keys_of(self, layout: Layout) -> Iterable[list[str]]:
        """A layout's keys in batches that each stay in one slot."""
        if layout.generation == LEGACY:
            yield list(board_keys(self._prefix, layout.board_id).legacy)
            return
        for keys in layout.shard_keys(self._prefix):
            yield [keys.ranking, keys.state]
            buckets = keys.all_buckets()
            for start in range(0, len(buckets), DELETE_BATCH):
                yield buckets[start : start + DELETE_BATCH]


async def listpack_advice(redis: ProjectionRedis) -> list[str]:
    """What to change on each Redis server whose hash settings would let the version buckets
    outgrow their compact encoding (empty: nothing); a server that refuses CONFIG is named too."""
    servers: list[tuple[str, ProjectionRedis | ClusterNode]] = []
    if isinstance(redis, RedisCluster):
        await redis.initialize()
        servers = [(node.name, node) for node in redis.get_primaries()]
    else:
        servers = [("redis", redis)]
    advice = []
    for name, server in servers:
        try:
            if isinstance(server, ClusterNode):
                found = await cast(RedisCluster, redis).config_get("hash-max-listpack-*", target_nodes=server)
            else:
                found = await server.config_get("hash-max-listpack-*")
        except RedisError as exc:
            advice.append(f"{name}: cannot read its settings ({exc}); make sure " + _WANTED)
            continue
        entries = int(found.get("hash-max-listpack-entries") or 0)
        value = int(found.get("hash-max-listpack-value") or 0)
        if entries < LISTPACK_ENTRIES or value < LISTPACK_VALUE:
            advice.append(
                f"{name} has hash-max-listpack-entries {entries}, hash-max-listpack-value {value}: set "
                + _WANTED
            )
    return advice


_WANTED = (
    f"hash-max-listpack-entries {LISTPACK_ENTRIES} and hash-max-listpack-value {LISTPACK_VALUE} (or more) "
    "in its configuration, then rebuild (ops/lb rebuild): larger version buckets take about five times the memory"
)
