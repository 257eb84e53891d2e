"""Reads of the Redis ranking projection: top K, a player's rank with neighbours, the board's size,
each with asOf.

asOf is read before the board's keys. Positions only move forward after the totals they cover are
applied, so every award at or before a reported position is in the response (it may hold more).
A projection without an epoch (lost) or marked rebuilding answers ``stale``. A CLOSED board's reads
claim its cutoffs (``regions.core.reads.board_positions``): they come from its frozen standings.
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
from regions.redis_connection import call_scripts
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

    async def _confirmed(self, before: Positions, board: Board, empty: bool) -> AsOf:
        """The asOf of an answer read after ``before``. An empty answer may come from a Redis that
        lost the projection after ``before`` was read, and ``before`` would claim what it lacks:
        then the positions are read again, and a changed epoch makes the answer stale."""
        as_of = self._as_of(before, board)
        if empty and not as_of.stale and (await self._projection.positions()).epoch != before.epoch:
            return self._as_of(before, board, stale=True)
        return as_of

    async def top(self, board: Board, k: int) -> RankPage:
        before = await self._projection.positions()
        window = window_of(await self._script(keys=self._keys(board), args=self._top_args(board, k)))
        entries = [] if window is None else entries_of(board, window)
        return RankPage(entries, await self._confirmed(before, board, not entries))

    async def _around(self, board: Board, user_id: str, around: int) -> tuple[PlayerContext | None, AsOf]:
        before = await self._projection.positions()
        reply = await self._script(keys=self._keys(board), args=self._player_args(board, user_id, around))
        window = window_of(reply)
        as_of = await self._confirmed(before, board, window is None)
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
    ) -> tuple[Window | None, list[Window | None]]:
        """The top ``k`` and each player's own rank (no neighbours), in one round trip; read the
        asOf before calling, as the other reads do."""
        keys = self._keys(board)
        replies = await call_scripts(
            self._projection.redis,
            [(self._script, keys, self._top_args(board, k))]
            + [(self._script, keys, self._player_args(board, user, 0)) for user in user_ids],
        )
        return window_of(replies[0]), [window_of(r) for r in replies[1:]]
