"""Reads of the Redis ranking projection: top K, a player's rank with neighbours, the board's size,
each with asOf.

asOf is read before the board's keys. Positions only move forward after the totals they cover are
applied, so every award at or before a reported position is in the response (it may hold more).
A projection without an epoch (lost) or marked rebuilding answers ``stale``. A CLOSED board's reads
claim its cutoffs (``regions.core.reads.board_positions``): they come from its frozen standings.

The epoch is read again after the board's keys, in the same round trip on one server. Redis may
lose the projection between the two reads, and a Redis that lost it need not be empty when the
board is read: the projector's batch in flight at that moment writes its totals into it before it
finds the epoch gone (and then removes them). Such an answer holds a few players while the
positions read before claim the whole board, so an answer read across a change of epoch is stale,
whatever it holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from regions.core.boards import Board
from regions.core.freshness import FreshnessRule
from regions.core.reads import (
    AsOf,
    PlayerContext,
    RankedEntry,
    RankPage,
    Window,
    board_positions,
    context_of,
    entries_of,
    member_strip,
)
from regions.redis_connection import ScriptCall
from regions.redis_projection import Positions, RedisProjection
from schema.redis_keys import board_keys
from schema.resources import lua_script


def window_of(reply: Any) -> Window | None:
    """A ``read_window`` reply as a window; None when the player has no score."""
    if not reply:
        return None
    rows = [(reply[i], reply[i + 1]) for i in range(3, len(reply), 2)]
    return Window(int(reply[0]), int(reply[1]), int(reply[2]), rows)


class RankReader:
    """Reads of one region's projection; ``region`` names it in every asOf. With ``freshness``,
    each asOf also says how fresh the projection is for every region (``clock``: wall time, s)."""

    def __init__(
        self,
        projection: RedisProjection,
        key_prefix: str,
        region: str,
        freshness: FreshnessRule | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._projection = projection
        self._prefix = key_prefix
        self._region = region
        self._freshness = freshness
        self._clock = clock
        self._script = projection.redis.register_script(lua_script("read_window"))

    @property
    def region(self) -> str:
        return self._region

    def _keys(self, board: Board) -> list[str]:
        keys = board_keys(self._prefix, board.id)
        return [keys.ranking, keys.records]

    @staticmethod
    def _top_args(board: Board, k: int) -> list[str | int]:
        return ["top", k, member_strip(board)]

    @staticmethod
    def _player_args(board: Board, user_id: str, around: int) -> list[str | int]:
        return ["player", user_id, around, member_strip(board)]

    def _as_of(self, p: Positions, board: Board | None, *, stale: bool = False) -> AsOf:
        rule = self._freshness
        regions = () if rule is None else rule.statuses(p.marks, int(self._clock() * 1000))
        stale = stale or p.epoch is None or p.rebuilding
        offsets = p.offsets if board is None else board_positions(board, p.offsets)
        return AsOf(self._region, offsets, p.newest_accepted_ms, stale, regions)

    async def as_of(self, board: Board | None = None) -> AsOf:
        """What the projection reflects (for ``board``: what a read of it claims)."""
        return self._as_of(await self._projection.positions(), board)

    async def _read(self, board: Board, calls: Sequence[ScriptCall]) -> tuple[AsOf, list[Any]]:
        """Run read scripts on the board's keys: their replies, with the asOf read before them;
        stale when the epoch read after them is another (see the module's note)."""
        before = await self._projection.positions()
        replies, epoch = await self._projection.epoch_after(calls)
        return self._as_of(before, board, stale=epoch != before.epoch), replies

    async def top(self, board: Board, k: int) -> RankPage:
        call = (self._script, self._keys(board), self._top_args(board, k))
        as_of, (reply,) = await self._read(board, [call])
        window = window_of(reply)
        return RankPage([] if window is None else entries_of(board, window), as_of)

    async def _around(self, board: Board, user_id: str, around: int) -> tuple[PlayerContext | None, AsOf]:
        call = (self._script, self._keys(board), self._player_args(board, user_id, around))
        as_of, (reply,) = await self._read(board, [call])
        window = window_of(reply)
        return (None if window is None else context_of(board, window, as_of)), as_of

    async def context(self, board: Board, user_id: str, around: int) -> PlayerContext | None:
        """The player with up to ``around`` neighbours each side (fewer at a boundary)."""
        return (await self._around(board, user_id, around))[0]

    async def player(self, board: Board, user_id: str) -> tuple[RankedEntry | None, AsOf]:
        """The player's exact rank, or None (no score) as of the returned positions."""
        context, as_of = await self._around(board, user_id, 0)
        return (None if context is None else context.player), as_of

    async def player_count(self, board: Board) -> int:
        return await self._projection.count(board_keys(self._prefix, board.id))

    async def windows(
        self, board: Board, user_ids: Sequence[str], k: int
    ) -> tuple[AsOf, Window | None, list[Window | None]]:
        """The top ``k`` and each player's own rank (no neighbours) in one read, with its asOf."""
        keys = self._keys(board)
        as_of, replies = await self._read(
            board,
            [(self._script, keys, self._top_args(board, k))]
            + [(self._script, keys, self._player_args(board, user, 0)) for user in user_ids],
        )
        return as_of, window_of(replies[0]), [window_of(r) for r in replies[1:]]
