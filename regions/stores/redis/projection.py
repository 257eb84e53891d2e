"""Redis projection adapter: versioned apply, positions (asOf), board size, hints (reads: ``redis_reads``)."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any, cast

from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterPipeline

from regions.core.boards import SortOrder
from regions.core.ordering import total_of
from regions.core.positions import SourceKey, SourcePosition
from regions.runtime.settings import RedisSettings
from regions.stores.redis import connection as redis_connection
from regions.stores.redis.connection import (
    ProjectionRedis,
    ScriptCall,
    call_scripts,
    execute_pipeline,
    publish_many,
)
from regions.stores.redis.layouts import BUILDING, LIVE, Layout, LayoutMoved, Layouts, ShardLost
from regions.stores.redis.positions import Positions, position_fields, positions_of
from schema.redis_keys import (
    LAYOUT_FORMAT,
    ShardKeys,
    board_keys,
    hints_channel,
    positions_key,
    shard_of,
)
from schema.resources import lua_script


def connect_redis(redis: RedisSettings) -> ProjectionRedis:
    """A client for the projection (one server or a cluster, by the URL); replies are decoded to str."""
    return redis_connection.connect_redis(redis.url)


ERASED = -1  # the version of an erased player's removal


@dataclass(frozen=True, slots=True)
class ProjectedTotal:
    """One total as the projection stores it: ``score`` and ``member`` already encode rank order; an
    empty ``member`` removes the player (the version still recorded), version ``ERASED`` its record too."""

    user_id: str
    version: int
    total: int
    score: float
    member: str
    metadata: str = ""  # of the award that holds the total (canonical JSON text); empty: none


@dataclass(frozen=True, slots=True)
class ApplyResult:
    sequence: int
    users: list[str]


@dataclass(frozen=True, slots=True)
class BoardTotals:
    """A board's totals to apply, with the shard count its newest awards carry: the layout of a
    board that has none yet."""

    board_id: str
    shards: int
    totals: Sequence[ProjectedTotal]


def _by_shard(layout: Layout, totals: Sequence[ProjectedTotal]) -> list[list[ProjectedTotal]]:
    shards: list[list[ProjectedTotal]] = [[] for _ in range(layout.shards)]
    for t in totals:
        shards[shard_of(t.user_id, layout.shards)].append(t)
    return shards


def _apply_call(
    keys: ShardKeys, state: str, totals: Sequence[ProjectedTotal]
) -> tuple[list[str], list[str | int | float]]:
    """KEYS and ARGV of ``apply_totals`` for one shard's totals: each player's version bucket is
    followed in KEYS by its metadata bucket."""
    buckets: dict[str, int] = {}
    args: list[str | int | float] = [state]
    for t in totals:
        index = buckets.setdefault(keys.bucket(t.user_id), 2 * len(buckets) + 3)  # KEYS[3..] (Lua counts from 1)
        args += [t.user_id, t.version, t.score, t.member, index, t.metadata]
    return [keys.ranking, keys.state, *(k for b in buckets for k in (b, keys.note_bucket_of(b)))], args


class RedisProjection:
    def __init__(self, redis: ProjectionRedis, key_prefix: str) -> None:
        self.redis = redis
        self._prefix = key_prefix
        self._positions = positions_key(key_prefix)
        self.layouts = Layouts(redis, key_prefix)
        self._apply = redis.register_script(lua_script("apply_totals"))
        self._advance = redis.register_script(lua_script("advance_positions"))
        self._replace = redis.register_script(lua_script("replace_hash"))

    async def _apply_into(
        self, work: Sequence[tuple[Layout, Sequence[ProjectedTotal], str]]
    ) -> list[list[str] | None]:
        """Apply each layout's totals shard by shard, in one round trip (each shard atomically):
        per layout the users applied, or None when a shard's layout was not in the state given."""
        return await self._applied(*self._apply_calls(work))

    def _apply_calls(
        self, work: Sequence[tuple[Layout, Sequence[ProjectedTotal], str]]
    ) -> tuple[int, list[ScriptCall], list[int]]:
        """The script calls that apply ``work``: the layouts' count, the calls, each call's layout."""
        calls: list[ScriptCall] = []
        owners: list[int] = []
        for i, (layout, totals, state) in enumerate(work):
            for shard, part in enumerate(_by_shard(layout, totals)):
                if part:
                    keys, args = _apply_call(layout.shard(self._prefix, shard), state, part)
                    calls.append((self._apply, keys, args))
                    owners.append(i)
        return len(work), calls, owners

    async def _applied(
        self, layouts: int, calls: list[ScriptCall], owners: list[int]
    ) -> list[list[str] | None]:
        applied: list[list[str] | None] = [[] for _ in range(layouts)]
        for i, reply in zip(owners, await call_scripts(self.redis, calls), strict=True):
            users = applied[i]
            if int(reply[0]) == 0 or users is None:
                applied[i] = None
            else:
                users += reply[1:]
        return applied

    async def apply_live(self, work: Sequence[BoardTotals]) -> list[ApplyResult]:
        """Apply boards' totals to their live layouts (a board without one gets its first, of the
        shard count its totals carry), each shard atomically, newer versions only; then step each
        changed board's hint sequence. A shard that answers ``moved`` has its board's layout read
        again and the board's totals applied there (it was swapped out; when the whole Redis lost
        the projection, the caller's epoch check finds it); ShardLost when the layout read again is
        the same (that shard lost its keys), LayoutMoved when it moves three times."""
        applied: dict[str, list[str]] = {}
        pending = list(work)
        for _ in range(3):
            layouts = await self.layouts.live(w.board_id for w in pending)
            known = {b: layout for b, layout in layouts.items() if layout is not None}
            fresh = [Layout.new(w.board_id, w.shards) for w in pending if layouts[w.board_id] is None]
            if fresh:
                await self.layouts.create(fresh)
                known.update({layout.board_id: layout for layout in fresh})
            replies = await self._apply_into([(known[w.board_id], w.totals, LIVE) for w in pending])
            retry = []
            for w, users in zip(pending, replies, strict=True):
                if users is None:
                    if await self.layouts.still_named(known[w.board_id]):
                        raise ShardLost(f"a shard of the live layout {known[w.board_id]} lost its keys")
                    retry.append(w)
                applied.setdefault(w.board_id, []).extend(users or [])
            if not retry:
                break
            pending = retry
        else:
            raise LayoutMoved(
                f"the layout of {[w.board_id for w in pending]} kept changing under the projector"
            )
        changed = [w.board_id for w in work if applied[w.board_id]]
        sequences = dict(zip(changed, await self._step_sequences([known[b] for b in changed]), strict=True))
        return [ApplyResult(sequences.get(w.board_id, 0), applied[w.board_id]) for w in work]

    async def apply(self, board_id: str, totals: Sequence[ProjectedTotal], shards: int = 1) -> ApplyResult:
        """Apply one board's totals to its live layout (see ``apply_live``)."""
        return (await self.apply_live([BoardTotals(board_id, shards, totals)]))[0]

    def apply_fresh(
        self, work: Sequence[tuple[Layout, Sequence[ProjectedTotal]]], swapped: Set[str] = frozenset()
    ) -> Coroutine[Any, Any, list[list[str]]]:
        """Apply totals to fresh layouts being built (see ``Layouts.prepare``), leaving hint
        sequences alone: their writes are no news for subscribers. A layout of a board in
        ``swapped`` is live already (a rebuild resumed after it swapped some boards in). The calls
        are prepared now (this may run on a worker thread) and sent when awaited: a rebuild
        prepares a batch while Redis applies the ones before. ShardLost when one is no longer in its
        state: only its rebuild writes it, so a shard of it lost its keys (or all Redis did)."""
        prepared = self._apply_calls(
            [(layout, totals, LIVE if layout.board_id in swapped else BUILDING) for layout, totals in work]
        )
        return self._fresh_applied(work, prepared)

    async def _fresh_applied(
        self,
        work: Sequence[tuple[Layout, Sequence[ProjectedTotal]]],
        prepared: tuple[int, list[ScriptCall], list[int]],
    ) -> list[list[str]]:
        replies = await self._applied(*prepared)
        for (layout, _), users in zip(work, replies, strict=True):
            if users is None:
                raise ShardLost(
                    f"the fresh layout {layout.generation} of {layout.board_id} is no longer being built: "
                    "a shard of it lost its keys"
                )
        return [users or [] for users in replies]

    async def start_epoch(self, epoch: str, *, sequence_base: int = 0, rebuilding: bool = False) -> None:
        """Begin a new life of the projection, in one step: positions restart from nothing and,
        with ``rebuilding``, every read says stale until a rebuild completes."""
        fields: list[str | int] = ["epoch", epoch, "sequence_base", sequence_base, "layout", LAYOUT_FORMAT]
        if rebuilding:
            fields += ["rebuilding", "1"]
        await self._replace(keys=[self._positions], args=fields)

    async def advance(
        self, epoch: str, marks: Mapping[SourceKey, SourcePosition], *, completes_rebuild: bool = False
    ) -> bool:
        """Move positions forward, each field on its own (and with ``completes_rebuild`` end the
        rebuilding state in the same step); False when Redis no longer holds this epoch (data was
        lost)."""
        args: list[str | int] = [epoch, "1" if completes_rebuild else "0", *position_fields(marks)]
        return bool(await self._advance(keys=[self._positions], args=args))

    async def epoch(self) -> str | None:
        """The projection's epoch now: read after a board's keys, another one than the epoch read
        before them says Redis lost the projection meanwhile."""
        return cast(str | None, await self.redis.hget(self._positions, "epoch"))

    async def positions(self) -> Positions:
        return positions_of(cast(dict[str, str], await self.redis.hgetall(self._positions)))

    async def drop(self, board_ids: Sequence[str]) -> None:
        """Delete boards' layouts whole (not their hint sequences): what a batch wrote into a Redis
        that had lost the projection."""
        await self.layouts.drop(board_ids)

    async def next_sequences(self, board_ids: Sequence[str]) -> list[int]:
        """One more step of each board's hint sequence."""
        pipe = self.redis.pipeline(transaction=False)
        for board_id in board_ids:
            pipe.incr(board_keys(self._prefix, board_id).sequence)
        return [int(n) for n in await execute_pipeline(pipe)] if board_ids else []

    async def _step_sequences(self, layouts: Sequence[Layout]) -> list[int]:
        """``next_sequences`` of the boards of live ``layouts``, each step followed by a look at
        its board's first shard, whose slot the sequence shares: ShardLost when that shard's keys
        are gone, since then the step may have begun the sequence anew (the new epoch's base keeps
        the hints of the rebuild that follows ahead of every hint sent before)."""
        pipe = self.redis.pipeline(transaction=False)
        for layout in layouts:
            pipe.incr(board_keys(self._prefix, layout.board_id).sequence)
            pipe.get(layout.shard(self._prefix, 0).state)
        replies = await execute_pipeline(pipe) if layouts else []
        for layout, state in zip(layouts, replies[1::2], strict=True):
            if state != LIVE and await self.layouts.still_named(layout):
                raise ShardLost(f"the first shard of the live layout {layout} lost its keys")
        return [int(n) for n in replies[::2]]

    async def next_hint_sequence(self, board_id: str, attempts: int = 5) -> int:
        """The board's next hint sequence for a hint that is not a batch of totals (a status change):
        one more step of its counter plus the epoch's base, read on both sides of the step so that a
        new epoch beginning meanwhile (whose base is larger) is not mixed with the old base."""
        for _ in range(attempts):
            before = await self.positions()
            step = (await self.next_sequences([board_id]))[0]
            if (await self.positions()).epoch == before.epoch:
                break
        return before.sequence_base + step

    async def count(self, board_id: str) -> int:
        """Players on the board (every shard of its live layout)."""
        layout = await self.layouts.live_one(board_id)
        if layout is None:
            return 0
        pipe = self.redis.pipeline(transaction=False)
        for keys in layout.shard_keys(self._prefix):
            pipe.zcard(keys.ranking)
        return sum(int(n) for n in await execute_pipeline(pipe))

    async def version_of(self, board_id: str, user_id: str) -> int | None:
        """The recorded version of one player's total, or None when the player is absent."""
        [record] = (await self._records(board_id, [user_id]))[1]
        return None if record is None else int(record.split("|", 1)[0])

    async def total_of(
        self, board_id: str, user_id: str, sort_order: SortOrder = SortOrder.DESC
    ) -> int | None:
        """One player's projected total, or None when the player is absent."""
        return (await self.totals_of(board_id, [user_id], sort_order))[user_id]

    async def totals_of(
        self, board_id: str, users: Sequence[str], sort_order: SortOrder = SortOrder.DESC
    ) -> dict[str, int | None]:
        """The projection's total of each player (None when the player is absent): the score of the
        member its version record names, two round trips for any number of players."""
        layout, records = await self._records(board_id, users)
        if layout is None or not users:
            return dict.fromkeys(users)
        pipe = self.redis.pipeline(transaction=False)
        for user, record in zip(users, records, strict=True):
            _, bar, reached = (record or "").partition("|")
            pipe.zscore(layout.shard(self._prefix, shard_of(user, layout.shards)).ranking,
                        f"{reached}|{user}" if bar else user)  # fmt: skip
        scores = cast(list[float | None], await self._checked(pipe, layout, users))
        return {  # (a record "version|" is a player who left the ranking: no score, no member)
            user: None if record is None or score is None else total_of(sort_order, float(score))
            for user, record, score in zip(users, records, scores, strict=True)
        }

    async def _records(self, board_id: str, users: Sequence[str]) -> tuple[Layout | None, list[str | None]]:
        """The board's live layout and the version record of each player in it."""
        layout = await self.layouts.live_one(board_id)
        if layout is None or not users:
            return layout, [None for _ in users]
        pipe = self.redis.pipeline(transaction=False)
        for user in users:
            pipe.hget(layout.shard(self._prefix, shard_of(user, layout.shards)).bucket(user), user)
        return layout, cast(list[str | None], await self._checked(pipe, layout, users))

    async def _checked(
        self, pipe: Pipeline | ClusterPipeline, layout: Layout, users: Sequence[str]
    ) -> list[Any]:
        """Run ``pipe``, reads of the players' shards of ``layout``, and then look at those shards'
        states: ShardLost when one is gone while the layout is still named live (the reads may miss
        what it lost; a state cannot come back, so one found after the reads covers them)."""
        shards = sorted({shard_of(user, layout.shards) for user in users})
        for shard in shards:
            pipe.get(layout.shard(self._prefix, shard).state)
        replies = await execute_pipeline(pipe)
        reads = len(replies) - len(shards)
        if any(state != LIVE for state in replies[reads:]) and await self.layouts.still_named(layout):
            raise ShardLost(f"a shard of the live layout {layout} lost its keys")
        return replies[:reads]

    async def publish_hint(self, board_id: str, payload: bytes) -> None:
        await self.redis.publish(hints_channel(self._prefix, board_id), payload)

    async def publish_hints(self, hints: Sequence[tuple[str, bytes]]) -> None:
        """Publish (board id, payload) hints in one round trip."""
        await publish_many(
            self.redis, [(hints_channel(self._prefix, board), payload) for board, payload in hints]
        )
