"""Reads of the Redis ranking projection: top K, a player's rank with neighbours, the board's size,
each with asOf.

asOf is read before the board's keys. Positions only move forward after the totals they cover are
applied, so every award at or before a reported position is in the response (it may hold more). A
board's layout (which keys hold it) may be known before the positions are read, but a board found
to have none yet is looked up again after them: it may have been laid out and filled in between.
A projection without an epoch (lost) or marked rebuilding answers ``stale``. A CLOSED board's reads
claim its cutoffs (``regions.core.reads.board_positions``): they come from its frozen standings.

A board one of whose shards lost its keys (on a Redis Cluster, a master that does not hold the
epoch restarted empty: the shard refuses while the layouts hash still names its layout) answers
nothing, stale, until the projector has rebuilt it; a whole read (an archive) raises ShardLost.

The epoch is read again after the board's keys. Redis may lose the projection between the two
reads, and a Redis that lost it need not be empty when the board is read: the projector's batch in
flight at that moment writes its totals into it before it finds the epoch gone (and then removes
them). Such an answer holds a few players while the positions read before claim the whole board, so
an answer read across a change of epoch is stale, whatever it holds.

Every read goes over the client's links (``regions.stores.redis.rounds``: commands packed in C, one
write per server a round, routed by slot on a cluster), in rounds framed by those two reads
(``regions.stores.redis.framing``). On one server a read of one shard is one round trip, positions
and epoch included, and so is a sharded top K; a sharded player or context is two (its own shard,
then the others). On a cluster the first round's commands on other masters than the positions'
wait for them, and the epoch is read after the last round unless that round was all on its master.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from regions.core.boards import Board
from regions.core.freshness import FreshnessRule
from regions.core.paging import EMPTY_PAGE, Page, PageRequest
from regions.core.player_lists import Found, ranked
from regions.core.reads import (
    AsOf,
    PlayerContext,
    RankedEntry,
    RankPage,
    Row,
    Window,
    board_positions,
    context_of,
    entries_of,
    member_strip,
    merged_context,
    merged_top,
)
from regions.stores.redis.framing import Frame, Unframed
from regions.stores.redis.layouts import Layout, LayoutMoved, ShardLost
from regions.stores.redis.links import Command
from regions.stores.redis.pages import Form, Round, read_page
from regions.stores.redis.positions import Positions
from regions.stores.redis.projection import RedisProjection
from regions.stores.redis.replies import EMPTY, Moved, counted, found_players, full_window, window_of
from regions.stores.redis.rounds import Rounds, rounds_of
from regions.stores.redis.whole import ShardRows, first_rows, merged_rows
from schema.redis_keys import positions_key, shard_of
from schema.resources import lua_script

T = TypeVar("T")


class Send(Protocol):
    """One round of a read (``Frame.round``, ``Unframed.round``): the replies, in order; ``last``:
    no round of the read follows."""

    def __call__(self, commands: Sequence[Command], *, last: bool = False) -> Awaitable[list[Any]]: ...


MOVED_RETRIES = 5  # a board's layout is swapped at most once in a while: a read retries that often


class RankReader:
    """Reads of one region's projection; ``region`` names it in every asOf. With ``freshness``,
    each asOf also says how fresh the projection is for every region (``clock``: wall time, s).
    ``rounds``: how its commands travel (by default the client's links).

    A board of several shards is read with one script call per shard, in parallel, after the asOf:
    each shard holds at least what the asOf covers, so the merged answer does too."""

    def __init__(
        self,
        projection: RedisProjection,
        key_prefix: str,
        region: str,
        freshness: FreshnessRule | None = None,
        clock: Callable[[], float] = time.time,
        rounds: Rounds | None = None,
    ) -> None:
        self._projection = projection
        self._prefix = key_prefix
        self._region = region
        self._freshness = freshness
        self._clock = clock
        self._source = lua_script("read_window")
        self._sha = projection.redis.register_script(self._source).sha
        self._rounds = rounds or rounds_of(projection.redis)

    @property
    def region(self) -> str:
        return self._region

    def _call(self, board: Board, layout: Layout, shard: int, *form: str | int) -> Command:
        keys = layout.shard(self._prefix, shard)
        args = (keys.ranking, keys.state, keys.buckets, member_strip(board), *form)
        return Command(keys.ranking, ("EVALSHA", self._sha, 2, *args), self._source)

    def _frame(self, positions: Positions | None = None) -> Frame:
        return Frame(self._rounds, positions_key(self._prefix), positions)

    async def _live(self, frame: Frame | Unframed, board_ids: Sequence[str]) -> dict[str, Layout | None]:
        """The boards' live layouts. A board with none yet is looked up again once the ``frame``'s
        positions are read: the projector lays a board out before it applies its first totals, and
        those before it moves the positions past them, so a board without a layout after the
        positions holds nothing they cover (looked up before them, it may have been laid out,
        filled and covered since)."""
        layouts = self._projection.layouts
        found = await layouts.live(board_ids)
        if None in found.values() and await frame.begin():
            found = await layouts.live(board_ids)
        return found

    async def _laid_out(
        self, frame: Frame | Unframed, board: Board, read: Callable[[Layout], Awaitable[T]], empty: T
    ) -> T:
        """``read`` on the board's live layout (``empty`` when it has none), again on the new
        layout when the one read was swapped out meanwhile; ShardLost when a shard of the layout
        still named live refused (it lost its keys)."""
        for _ in range(MOVED_RETRIES):
            layout = (await self._live(frame, [board.id]))[board.id]
            if layout is None:
                return empty
            try:
                return await read(layout)
            except Moved:
                if await self._projection.layouts.still_named(layout):
                    raise ShardLost(f"a shard of the live layout {layout} lost its keys") from None
        raise LayoutMoved(f"the layout of {board.id} changed {MOVED_RETRIES} times during one read")

    async def _answer(
        self, frame: Frame | Unframed, board: Board, read: Callable[[Layout], Awaitable[T]], empty: T
    ) -> tuple[T, bool]:
        """``read`` as ``_laid_out`` does, and whether the board lost a shard (then ``empty``)."""
        try:
            return await self._laid_out(frame, board, read, empty), False
        except ShardLost:
            return empty, True

    async def _top(self, send: Send, board: Board, layout: Layout, k: int) -> Window:
        replies = await send(
            [self._call(board, layout, s, "top", k) for s in range(layout.shards)], last=True
        )
        windows = [full_window(r) for r in replies]
        return windows[0] if layout.shards == 1 else merged_top(windows, k)

    async def _others(
        self, send: Send, board: Board, layout: Layout, user_id: str, owner: Window, around: int
    ) -> Window:
        """The player's window across every shard, from its own shard's ``owner`` window."""
        if layout.shards == 1:
            return owner
        member, score, _, _ = owner.rows[owner.rank - owner.first]
        mine = shard_of(user_id, layout.shards)
        calls = [
            self._call(board, layout, s, "around", score, member, around)
            for s in range(layout.shards)
            if s != mine
        ]
        return merged_context(owner, [full_window(r) for r in await send(calls, last=True)], around)

    async def _player(
        self, send: Send, board: Board, layout: Layout, user_id: str, around: int
    ) -> Window | None:
        mine = shard_of(user_id, layout.shards)
        [reply] = await send([self._call(board, layout, mine, "player", user_id, around)])
        owner = window_of(reply)
        return None if owner is None else await self._others(send, board, layout, user_id, owner, around)

    def _as_of(self, p: Positions, board: Board | None, *, stale: bool = False) -> AsOf:
        rule = self._freshness
        regions = () if rule is None else rule.statuses(p.marks, int(self._clock() * 1000))
        stale = stale or p.epoch is None or p.rebuilding
        offsets = p.offsets if board is None else board_positions(board, p.offsets)
        return AsOf(self._region, offsets, p.newest_accepted_ms, stale, regions)

    async def as_of(self, board: Board | None = None) -> AsOf:
        """What the projection reflects (for ``board``: what a read of it claims)."""
        return self._as_of(await self._projection.positions(), board)

    async def _closed(self, frame: Frame, board: Board | None, lost: bool) -> AsOf:
        """The asOf of a framed read: stale when the epoch read after it is another than the
        positions' (see the module's note), or when the board ``lost`` a shard."""
        before, epoch = await frame.close()
        return self._as_of(before, board, stale=lost or epoch != before.epoch)

    async def top(self, board: Board, k: int) -> RankPage:
        frame = self._frame()
        window, lost = await self._answer(
            frame, board, lambda layout: self._top(frame.round, board, layout, k), EMPTY
        )
        return RankPage(entries_of(board, window), await self._closed(frame, board, lost))

    async def page(self, board: Board, request: PageRequest) -> tuple[Page, AsOf]:
        """A keyset page (``regions.stores.redis.pages``) with its asOf, read as ``top`` is."""
        frame = self._frame()
        page, lost = await self._answer(
            frame, board, lambda layout: read_page(self._round(frame.round, board, layout), layout.shards, request),
            EMPTY_PAGE,
        )  # fmt: skip
        return page, await self._closed(frame, board, lost)

    def _round(self, send: Send, board: Board, layout: Layout) -> Round:
        """One round of read_window calls on the layout's shards, as windows."""

        async def run(forms: Sequence[tuple[int, Form]]) -> list[Window]:
            replies = await send([self._call(board, layout, s, *form) for s, form in forms])
            return [full_window(r) for r in replies]

        return run

    async def _around(self, board: Board, user_id: str, around: int) -> tuple[PlayerContext | None, AsOf]:
        frame = self._frame()
        window, lost = await self._answer(
            frame, board, lambda layout: self._player(frame.round, board, layout, user_id, around), None
        )
        as_of = await self._closed(frame, board, lost)
        return (None if window is None else context_of(board, window, as_of)), as_of

    async def context(self, board: Board, user_id: str, around: int) -> PlayerContext | None:
        """The player with up to ``around`` neighbours each side (fewer at a boundary)."""
        return (await self._around(board, user_id, around))[0]

    async def player(self, board: Board, user_id: str) -> tuple[RankedEntry | None, AsOf]:
        """The player's exact rank, or None (no score) as of the returned positions."""
        context, as_of = await self._around(board, user_id, 0)
        return (None if context is None else context.player), as_of

    async def entries_as_of(
        self, wanted: Sequence[tuple[Board, str]], before: Positions | None = None
    ) -> tuple[list[RankedEntry | None], AsOf]:
        """Each (board, player)'s exact rank as ``player`` reads it (None: no score), for any number
        of players on any boards, with one asOf (``entries``, between the positions and the epoch).
        ``before``: the positions the caller has just read, which are then the asOf."""
        frame = self._frame(before)
        entries, lost = await self._entries(frame, wanted)
        return entries, await self._closed(frame, None, lost)

    async def entries(self, wanted: Sequence[tuple[Board, str]]) -> list[RankedEntry | None]:
        """What ``entries_as_of`` reads, without its asOf (so the positions and the epoch are not
        read): for a caller that knows nothing of what the read covers and needs not (a look before
        an award is sent)."""
        return (await self._entries(Unframed(self._rounds), wanted))[0]

    async def _entries(
        self, frame: Frame | Unframed, wanted: Sequence[tuple[Board, str]]
    ) -> tuple[list[RankedEntry | None], bool]:
        """The entries of ``entries_as_of`` and whether a board lost a shard: one pipelined round trip to
        the players' shards (and one more per player found on a sharded board, for the other
        shards). A board whose layout was swapped meanwhile is read again on its own."""
        send, layouts = frame.round, await self._live(frame, [board.id for board, _ in wanted])
        asked = [
            (i, b, u, layout) for i, (b, u) in enumerate(wanted) if (layout := layouts[b.id]) is not None
        ]
        calls = [
            self._call(b, layout, shard_of(u, layout.shards), "player", u, 0) for _, b, u, layout in asked
        ]
        replies = await send(calls)
        found = await asyncio.gather(
            *(
                self._player_of(frame, b, u, layout, r)
                for (_, b, u, layout), r in zip(asked, replies, strict=True)
            )
        )
        entries: list[RankedEntry | None] = [None for _ in wanted]
        for (i, board, _, _), (window, _) in zip(asked, found, strict=True):
            entries[i] = None if window is None else entries_of(board, window)[window.rank - window.first]
        return entries, any(gone for _, gone in found)

    async def _player_of(
        self, frame: Frame | Unframed, board: Board, user_id: str, layout: Layout, reply: Any
    ) -> tuple[Window | None, bool]:
        """A ``player`` reply as the player's window across shards, and whether a shard was lost."""
        try:
            owner = window_of(reply)
            return (
                None if owner is None else await self._others(frame.round, board, layout, user_id, owner, 0)
            ), False
        except Moved:
            return await self._answer(
                frame, board, lambda fresh: self._player(frame.round, board, fresh, user_id, 0), None
            )

    def claimed(self, positions: Positions) -> AsOf:
        """What a read of the whole projection at ``positions`` claims."""
        return self._as_of(positions, None)

    async def positions(self) -> Positions:
        return await self._projection.positions()

    async def player_count(self, board: Board) -> int:
        return await self._projection.count(board.id)

    async def windows(
        self, board: Board, user_ids: Sequence[str], k: int
    ) -> tuple[AsOf, Window, list[Window | None]]:
        """The top ``k`` and each player's own rank (no neighbours) with their asOf: one round trip
        to the board for one shard, two for a sharded one."""
        none: list[Window | None] = [None for _ in user_ids]
        frame = self._frame()
        (top, players), lost = await self._answer(
            frame, board, lambda layout: self._windows(frame.round, board, layout, user_ids, k), (EMPTY, none)
        )
        return await self._closed(frame, board, lost), top, players

    async def _windows(
        self, send: Send, board: Board, layout: Layout, user_ids: Sequence[str], k: int
    ) -> tuple[Window, list[Window | None]]:
        tops = [self._call(board, layout, s, "top", k) for s in range(layout.shards)]
        players = [self._call(board, layout, shard_of(u, layout.shards), "player", u, 0) for u in user_ids]
        replies = await send(tops + players)
        windows = [full_window(r) for r in replies[: layout.shards]]
        top = windows[0] if layout.shards == 1 else merged_top(windows, k)
        owners = [window_of(r) for r in replies[layout.shards :]]
        found = [(u, w) for u, w in zip(user_ids, owners, strict=True) if w is not None]
        merged = await asyncio.gather(*(self._others(send, board, layout, u, w, 0) for u, w in found))
        by_user = dict(zip((u for u, _ in found), merged, strict=True))
        return top, [by_user.get(u) for u in user_ids]

    async def players(self, board: Board, user_ids: Sequence[str]) -> tuple[dict[str, RankedEntry], AsOf]:
        """The entries of those of ``user_ids`` (distinct) that have a score, with their asOf: one
        script call per shard, and for a sharded board a second round of one per shard (the
        counts at the players' scores in the other shards)."""
        frame, none = self._frame(), dict[str, RankedEntry]()
        found, lost = await self._answer(
            frame, board, lambda layout: self._players(frame.round, board, layout, user_ids), none
        )
        return found, await self._closed(frame, board, lost)

    async def _players(
        self, send: Send, board: Board, layout: Layout, user_ids: Sequence[str]
    ) -> dict[str, RankedEntry]:
        n = layout.shards
        mine = [[u for u in user_ids if shard_of(u, n) == s] for s in range(n)]
        replies = await send([self._call(board, layout, s, "players", *mine[s]) for s in range(n)])
        count, found = 0, dict[str, Found]()
        for users, reply in zip(mine, replies, strict=True):
            count += counted(reply)
            found.update(found_players(users, reply))
        counts: dict[str, list[tuple[int, int]]] = {u: [] for u in found}
        asks = [[u for u in found if shard_of(u, n) != s] for s in range(n)]
        shards = [s for s in range(n) if asks[s]]
        forms = [[v for u in asks[s] for v in (found[u].score, found[u].member)] for s in shards]
        calls = [self._call(board, layout, s, "counts", *form) for s, form in zip(shards, forms, strict=True)]
        for s, reply in zip(shards, await send(calls, last=True) if calls else [], strict=True):
            counted(reply)
            for i, user in enumerate(asks[s]):
                counts[user].append((int(reply[2 + 2 * i]), int(reply[3 + 2 * i])))
        return {u: ranked(board, f, counts[u], count) for u, f in found.items()}

    async def ranked_rows(self, board: Board, size: int) -> AsyncIterator[list[Row]]:
        """The whole board in rank order, ``size`` rows at a time (the last part may be shorter),
        each shard read ``size`` rows per call. For a board that no longer changes (closed): parts
        read at different times are one answer only then. LayoutMoved when the board's layout is
        swapped after the first part."""

        def first(layout: Layout) -> Awaitable[list[ShardRows]]:
            return first_rows(lambda s, at, n: self.slice(board, layout, s, at, n), layout.shards, size)

        none: list[ShardRows] = []
        shards = await self._laid_out(Unframed(self._rounds), board, first, none)
        try:
            async for part in merged_rows(shards, size):
                yield part
        except Moved:
            raise LayoutMoved(f"the layout of {board.id} changed while it was read whole") from None

    async def slice(self, board: Board, layout: Layout, shard: int, first: int, count: int) -> Window:
        [reply] = await self._rounds.run([self._call(board, layout, shard, "slice", first, count)])
        return full_window(reply)
