"""Where a board's projection lives in Redis: its layout (a generation of keys and a shard count).

The layouts hash (``layouts_key``, in the slot of the positions and the epoch) names every board's
live layout; a copy under the board's own tag (``BoardKeys.layout``) lets a rebuild find the keys
to retire when the positions' slot was lost. Each shard of a layout has a state key in the shard's
own slot, ``building`` while a rebuild or a reshard fills it and ``live`` once it is swapped in; the
apply and read scripts check it in the same atomic step as their work, so a write or a read with an
outdated layout is refused (``moved``) and the caller reads the layouts hash again, never applying
out of order nor answering from keys being deleted.

A refused shard whose layout the layouts hash still names has lost its keys (``ShardLost``): a
swap takes the old states away only after the hash names the fresh layout, so nothing else takes
a named layout's state away. On a Redis Cluster that is how the loss of a master that does not
hold the epoch is noticed (the epoch tells the loss of the master that holds it).

A swap, made only while nothing else writes the board (the live projector is paused), marks the
fresh shards live (only where they are still being built: a shard whose keys were lost meanwhile
is not made live), names them in the layouts hash, and then takes the state of the old shards away;
the old keys are recorded as retired and deleted afterwards, a few at a time, in the background.
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

from regions.stores.redis.connection import ProjectionRedis, call_scripts, execute_pipeline
from schema.redis_keys import (
    LISTPACK_ENTRIES,
    LISTPACK_VALUE,
    ShardKeys,
    board_keys,
    layouts_key,
    retired_key,
    shard_keys,
)
from schema.resources import lua_script

log = logging.getLogger(__name__)
LIVE, BUILDING = "live", "building"
LEGACY = "legacy"  # the generation that names an earlier key layout's ranking and records
DELETE_BATCH = 512  # keys per UNLINK while deleting a retired layout


class LayoutMoved(Exception):
    """The board's layout changed (or vanished) under a write; the message names the board."""


class ShardLost(LayoutMoved):
    """A shard of a board's layout lost its keys while the layout was live or being built (on a
    Redis Cluster, its master restarted empty): the projection must be rebuilt, and reads of the
    board are stale until then. The message names the board and the layout."""


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

    def named(self) -> str:
        """The layouts hash's value for this layout (its field is the board)."""
        return f"{self.generation}\t{self.shards}"

    @classmethod
    def of_named(cls, board_id: str, raw: str) -> Layout:
        generation, shards = raw.split("\t")
        return cls(board_id, generation, int(shards))


class Layouts:
    """The live layouts of a projection's boards, cached: a cached layout stays right until a
    script answers ``moved``, and then the caller ``forget``s it and looks again."""

    def __init__(self, redis: ProjectionRedis, prefix: str) -> None:
        self._redis = redis
        self._prefix = prefix
        self._index = layouts_key(prefix)
        self._promote = redis.register_script(lua_script("promote_state"))
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
            found = cast(list[str | None], await self._redis.hmget(self._index, missing))
            for board_id, raw in zip(missing, found, strict=True):
                if raw:
                    self._live[board_id] = Layout.of_named(board_id, raw)
        return {b: self._live.get(b) for b in wanted}

    async def live_one(self, board_id: str) -> Layout | None:
        return (await self.live([board_id]))[board_id]

    async def still_named(self, layout: Layout) -> bool:
        """Whether the layouts hash still names ``layout`` (read anew). Asked after a shard of it
        refused: yes means that shard lost its keys (``ShardLost``), no that it was swapped out."""
        self.forget(layout.board_id)
        return await self.live_one(layout.board_id) == layout

    async def create(self, layouts: Sequence[Layout]) -> None:
        """Make new boards' first layouts live (nobody reads or writes them yet)."""
        await self._set_states([k.state for layout in layouts for k in layout.shard_keys(self._prefix)], LIVE)
        await self._name(layouts)

    async def _name(self, layouts: Sequence[Layout]) -> None:
        """Name ``layouts`` as their boards' live ones: the layouts hash, then each board's copy."""
        await self._redis.hset(self._index, mapping={layout.board_id: layout.named() for layout in layouts})
        pipe = self._redis.pipeline(transaction=False)
        for layout in layouts:
            pipe.hset(board_keys(self._prefix, layout.board_id).layout,
                      mapping={"generation": layout.generation, "shards": layout.shards})  # fmt: skip
        await execute_pipeline(pipe)
        self._live.update({layout.board_id: layout for layout in layouts})

    async def _copy(self, board_id: str) -> Layout | None:
        """The layout the board's own tag names (see ``BoardKeys.layout``)."""
        found = await self._redis.hmget(board_keys(self._prefix, board_id).layout, ["generation", "shards"])
        generation, shards = cast(list[str | None], found)
        return Layout(board_id, generation, int(shards)) if generation and shards else None

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

    async def _make_live(self, fresh: Layout) -> None:
        """Turn a layout being built live, shard by shard; ShardLost when a shard's keys are gone."""
        keys = fresh.shard_keys(self._prefix)
        replies = await call_scripts(
            self._redis, [(self._promote, [k.state], [BUILDING, LIVE]) for k in keys]
        )
        gone = [s for s, reply in enumerate(replies) if not int(reply)]
        if gone:
            raise ShardLost(
                f"shard(s) {gone} of the fresh layout {fresh.generation} of {fresh.board_id} lost their keys "
                "before the swap"
            )

    async def swap(self, fresh: Layout) -> Layout | None:
        """Make ``fresh`` the board's live layout in one step for readers (the layouts hash), after
        which the old layout's scripts answer ``moved``; returns the old layout, now retired. Call
        it only while nothing else writes the board. ShardLost when a shard of ``fresh`` lost its
        keys (nothing is swapped)."""
        board = board_keys(self._prefix, fresh.board_id)
        self._live.pop(fresh.board_id, None)
        old = await self.live_one(fresh.board_id)
        if old == fresh:  # swapped in already (a rebuild resumed after its swap began)
            return None
        await self._make_live(fresh)
        copy = await self._copy(fresh.board_id)  # another one when the layouts hash was lost
        await self._name([fresh])
        retired = list(
            dict.fromkeys(layout for layout in (old, copy) if layout is not None and layout != fresh)
        )
        if await self._redis.exists(board.legacy[0], board.legacy[1]):
            retired.append(Layout(fresh.board_id, LEGACY, 1))
        await self._retire(retired)
        return old if old is not None else copy

    async def _retire(self, layouts: Sequence[Layout]) -> None:
        """Record layouts for deletion in the background and take their states away (their scripts
        refuse from now on)."""
        if layouts:
            await self._redis.sadd(retired_key(self._prefix), *(layout.encoded() for layout in layouts))
            await self._redis.delete(
                *(k.state for layout in layouts for k in layout.shard_keys(self._prefix))
            )

    async def discard(self, layout: Layout) -> None:
        """A fresh layout that will not be swapped in (a reshard refused): delete it in the background."""
        await self._retire([layout])

    async def drop(self, board_ids: Sequence[str]) -> None:
        """Boards have no layout any more: their live layouts are retired (not their hint sequences)."""
        layouts = [layout for layout in (await self.live(board_ids)).values() if layout is not None]
        for board_id in board_ids:
            self.forget(board_id)
        if layouts:
            await self._redis.hdel(self._index, *(layout.board_id for layout in layouts))
            await self._redis.delete(
                *(board_keys(self._prefix, layout.board_id).layout for layout in layouts)
            )
            await self._retire(layouts)

    async def named(self) -> list[Layout]:
        """Every board's live layout, as the layouts hash names them."""
        raw = cast(dict[str, str], await self._redis.hgetall(self._index))
        return [Layout.of_named(board_id, value) for board_id, value in sorted(raw.items())]

    async def lost(self, layouts: Sequence[Layout]) -> list[Layout]:
        """Those of ``layouts`` (named live) with a shard whose state is not live: its keys were lost.
        Call it only while nothing swaps layouts."""
        pipe = self._redis.pipeline(transaction=False)
        for layout in layouts:
            for keys in layout.shard_keys(self._prefix):
                pipe.get(keys.state)
        states, found, at = await execute_pipeline(pipe), [], 0
        for layout in layouts:
            if any(state != LIVE for state in states[at : at + layout.shards]):
                found.append(layout)
            at += layout.shards
        return found

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
            buckets = keys.all_buckets() + keys.all_note_buckets()
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
