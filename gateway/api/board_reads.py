"""The read fields every ranked board type has (``Leaderboard``, ``LeaderboardPeriod``): top K, a
player's rank, its neighbours, the board's size and archived results, each with asOf.

Each field is declared here once, with its arguments, defaults and resolver; a type takes it under
its own description (``top = board_reads.top("The period's best k players ...")``), since the wording
differs ("in the current period", "in the period"), and names the boards it reads by implementing
``RankedBoard``. A read that both types answer goes here too.

This is not a GraphQL interface: the cost rule prices ``Leaderboard.top`` and
``LeaderboardPeriod.top`` by type name (``gateway.core.cost``), and a selection ``... on RankedBoard``
would escape it; strawberry would also list inherited fields first and share their descriptions.

A board with calendar periods is read, where no period is named, in its current period (the board
``<board>@<key>``, on the gateway's clock); a ROLLING board is one board whose totals cover its window.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod

import strawberry
from strawberry.types import Info

from gateway.api import ids
from gateway.api.context import Context
from gateway.api.errors import InvalidInput, LimitExceeded
from gateway.api.player_lists import PlayerList
from gateway.api.types import AsOf, BoardResult, PlayerContext, RankedPlayer, RankPage
from regions.core.boards import Board
from regions.core.periods import WindowSpec
from regions.core.player_lists import distinct, listed
from regions.core.reads import Scope
from regions.core.rollover import current_period
from regions.core.sketch import error_bound

MAX_PARTITIONS = 4096
"""The most partitions an approximate board's companion of partition totals is read for."""


def now_ms(info: Info[Context, None]) -> int:
    """The gateway's time for windows (the wall clock, moved by ``windows.clock_offset_s`` in tests)."""
    return info.context.services.settings.windows.now_ms(time.time())


def grace_ms(info: Info[Context, None]) -> int:
    return int(info.context.services.settings.windows.grace_s * 1000)


def periods_of(board: Board, argument: str) -> WindowSpec:
    """The window of a board with calendar periods; ``BAD_USER_INPUT`` for any other board."""
    spec = board.window_spec
    if spec is None:
        raise InvalidInput(f"{argument}: leaderboard {board.id!r} is an all-time board: it has no periods")
    if spec.rolling:
        raise InvalidInput(
            f"{argument}: leaderboard {board.id!r} is ROLLING ({spec.days} days): it has no periods; its "
            "top, player and context cover its window"
        )
    return spec


def current(board: Board, info: Info[Context, None]) -> Board:
    """The board a read of ``board`` that names no period reads."""
    spec = board.window_spec
    if spec is None or spec.rolling:
        return board
    period = board.for_period(current_period(spec, now_ms(info)).key)
    info.context.read_board(period.id)
    return period


class RankedBoard(ABC):
    """A type that has the read fields below: it names the boards they read."""

    board: Board  # the type's own board (a strawberry.Private field); ``result`` reads its archive

    @abstractmethod
    def ranked_board(self, info: Info[Context, None]) -> Board:
        """The board ``top``, ``player``, ``context`` and ``playerCount`` read, marked read for the answer cache."""


async def _top(
    self: RankedBoard, info: Info[Context, None], k: int | None = 10, scope: Scope | None = Scope.HOME
) -> RankPage:
    board, services = self.ranked_board(info), info.context.services
    k, scope = 10 if k is None else k, scope or Scope.HOME
    problem = services.limits.check_k(k)
    if problem is not None:
        raise LimitExceeded(problem)
    spec = board.approximate
    if spec is None:
        return RankPage.of(await services.projections.top(board, k, scope))
    if k > spec.k:
        raise InvalidInput(
            f"k: leaderboard {board.base_id!r} is approximate and keeps its best {spec.k}, got {k}"
        )
    page, counts = await asyncio.gather(
        services.projections.top(board, k, scope),
        services.projections.top(board.counts_board, MAX_PARTITIONS, scope),
    )
    return RankPage.of(page, error_bound(spec.epsilon, sum(e.score for e in counts.entries)))


def exact_only(board: Board) -> None:
    """``BAD_USER_INPUT`` on an approximate board: it keeps estimates of its best, no exact ranks."""
    if board.approximate is not None:
        raise InvalidInput(
            f"leaderboardId {board.base_id!r}: the board is approximate (trending): it keeps estimated counts "
            f"of its best {board.approximate.k} items and no exact ranks; read top(k), whose entries carry "
            "the exact count of the candidates it verified (verified, exactScore)"
        )


def top(description: str) -> RankPage:
    """``top(k: Int = 10, scope: Scope = HOME): RankPage!``; k over ``gateway.max_top_k``: LIMIT_EXCEEDED."""
    return strawberry.field(resolver=_top, description=description)


async def _player(
    self: RankedBoard, info: Info[Context, None], user_id: strawberry.ID, scope: Scope | None = Scope.HOME
) -> RankedPlayer | None:
    board = self.ranked_board(info)
    exact_only(board)
    user = ids.user_id("userId", str(user_id))
    entry, as_of = await info.context.services.projections.player(board, user, scope or Scope.HOME)
    return None if entry is None else RankedPlayer.of(entry, AsOf.of(as_of))


def player(description: str) -> RankedPlayer | None:
    """``player(userId: ID!, scope: Scope = HOME): RankedPlayer``, with its own asOf."""
    return strawberry.field(resolver=_player, description=description)


async def _context(
    self: RankedBoard,
    info: Info[Context, None],
    user_id: strawberry.ID,
    range: int | None = 4,
    scope: Scope | None = Scope.HOME,
) -> PlayerContext | None:
    board, services = self.ranked_board(info), info.context.services
    exact_only(board)
    range = 4 if range is None else range
    problem = services.limits.check_range(range)
    if problem is not None:
        raise LimitExceeded(problem)
    user = ids.user_id("userId", str(user_id))
    found = await services.projections.context(board, user, range, scope or Scope.HOME)
    return None if found is None else PlayerContext.of(found)


def context(description: str) -> PlayerContext | None:
    """``context(userId: ID!, range: Int = 4, scope: Scope = HOME): PlayerContext``; range over
    ``gateway.max_context_range``: LIMIT_EXCEEDED."""
    return strawberry.field(resolver=_context, description=description)


async def _players(
    self: RankedBoard,
    info: Info[Context, None],
    user_ids: list[strawberry.ID],
    scope: Scope | None = Scope.HOME,
) -> PlayerList:
    board, services = self.ranked_board(info), info.context.services
    exact_only(board)
    limits = services.limits
    problem = limits.check_players("userIds", len(user_ids), limits.max_listed_players)
    if problem is not None:
        raise LimitExceeded(problem)
    users = distinct(ids.user_id(f"userIds[{i}]", str(u)) for i, u in enumerate(user_ids))
    found, as_of = await services.projections.players(board, users, scope or Scope.HOME)
    return PlayerList.of(listed(users, found), as_of)


def players(description: str) -> PlayerList:
    """``players(userIds: [ID!]!, scope: Scope = HOME): PlayerList!``; more ids than
    ``gateway.max_listed_players``: LIMIT_EXCEEDED."""
    return strawberry.field(resolver=_players, description=description)


async def _player_count(
    self: RankedBoard, info: Info[Context, None], scope: Scope | None = Scope.HOME
) -> int:
    board = self.ranked_board(info)
    return await info.context.services.projections.player_count(board, scope or Scope.HOME)


def player_count(description: str) -> int:
    """``playerCount(scope: Scope = HOME): Int!``."""
    return strawberry.field(resolver=_player_count, description=description)


async def _result(
    self: RankedBoard, info: Info[Context, None], version: int | None = None
) -> BoardResult | None:
    header = await info.context.services.cassandra.adapter.results.get(self.board.id, version)
    return None if header is None else BoardResult(header=header, approximate=self.board.approximate is not None)


def result(description: str) -> BoardResult | None:
    """``result(version: Int = null): BoardResult``: the newest archived version when null."""
    return strawberry.field(resolver=_result, description=description)
