"""The read library of the gateway: top K, exact rank, and rank with neighbours, each with asOf.

asOf is read before the board's keys. Positions only move forward after the totals they cover are
applied, so every award at or before a reported position is in the response (it may hold more).
"""

from __future__ import annotations

from dataclasses import dataclass

from regions.core.boards import Board, TiePolicy
from regions.core.ordering import REACHED_WIDTH, user_of
from regions.redis_projection import Positions, RedisProjection, Window
from schema.redis_keys import BoardKeys, board_keys


@dataclass(frozen=True, slots=True)
class RankedEntry:
    rank: int  # 1-based, ordinal
    user_id: str
    score: int
    version: int


@dataclass(frozen=True, slots=True)
class AsOf:
    region: str
    positions: dict[int, int]
    newest_accepted_ms: int | None
    stale: bool  # the projection is being rebuilt or lost its positions


@dataclass(frozen=True, slots=True)
class RankPage:
    entries: list[RankedEntry]
    as_of: AsOf


@dataclass(frozen=True, slots=True)
class PlayerContext:
    player: RankedEntry
    above: list[RankedEntry]  # better ranked, nearest last
    below: list[RankedEntry]  # worse ranked, nearest first
    as_of: AsOf


def entries_of(board: Board, window: Window) -> list[RankedEntry]:
    """Rows of an atomic window read as ranked entries (records are ``version|total|member``)."""
    entries = []
    for i, (member, record) in enumerate(window.rows):
        version, total, _ = record.split("|", 2)
        entries.append(
            RankedEntry(window.first + i + 1, user_of(board.tie_policy, member), int(total), int(version))
        )
    return entries


class RankReader:
    def __init__(self, projection: RedisProjection, key_prefix: str, region: str) -> None:
        self._projection = projection
        self._prefix = key_prefix
        self._region = region

    def _keys(self, board: Board) -> BoardKeys:
        return board_keys(self._prefix, board.id)

    @staticmethod
    def _strip(board: Board) -> int:
        return REACHED_WIDTH + 1 if board.tie_policy is TiePolicy.FIRST_REACHED else 0

    def _as_of(self, p: Positions) -> AsOf:
        return AsOf(self._region, p.offsets, p.newest_accepted_ms, stale=p.epoch is None or p.rebuilding)

    async def as_of(self) -> AsOf:
        return self._as_of(await self._projection.positions())

    async def _confirmed(self, before: Positions, empty: bool) -> AsOf:
        """The asOf of an answer read after ``before``. An empty answer may come from a Redis that
        lost the projection after ``before`` was read, and ``before`` would claim what it lacks:
        then the positions are read again, and a changed epoch makes the answer stale."""
        as_of = self._as_of(before)
        if empty and not as_of.stale and (await self._projection.positions()).epoch != before.epoch:
            return AsOf(self._region, before.offsets, before.newest_accepted_ms, stale=True)
        return as_of

    async def top(self, board: Board, k: int) -> RankPage:
        before = await self._projection.positions()
        window = await self._projection.window(self._keys(board), "", k, self._strip(board))
        entries = [] if window is None else entries_of(board, window)
        return RankPage(entries, await self._confirmed(before, not entries))

    async def _around(self, board: Board, user_id: str, around: int) -> tuple[PlayerContext | None, AsOf]:
        before = await self._projection.positions()
        window = await self._projection.window(self._keys(board), user_id, around, self._strip(board))
        as_of = await self._confirmed(before, window is None)
        if window is None:
            return None, as_of
        entries = entries_of(board, window)
        at = window.rank - window.first
        return PlayerContext(entries[at], entries[:at], entries[at + 1 :], as_of), as_of

    async def context(self, board: Board, user_id: str, around: int) -> PlayerContext | None:
        """The player with up to ``around`` neighbours each side (fewer at a boundary)."""
        return (await self._around(board, user_id, around))[0]

    async def player(self, board: Board, user_id: str) -> tuple[RankedEntry | None, AsOf]:
        """The player's exact rank, or None (no score) as of the returned positions."""
        context, as_of = await self._around(board, user_id, 0)
        return (None if context is None else context.player), as_of

    async def player_count(self, board: Board) -> int:
        return await self._projection.count(self._keys(board))
