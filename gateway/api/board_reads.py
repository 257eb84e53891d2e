"""The reads every board-like type answers (``Leaderboard``, ``LeaderboardPeriod``): top K, a
player's rank, its neighbours, the board's size and archived results, each with asOf.

A board with calendar periods is read, where no period is named, in its current period (the board
``<board>@<key>``, on the gateway's clock); a ROLLING board is one board whose totals cover its window.
"""

from __future__ import annotations

import time

import strawberry
from strawberry.types import Info

from gateway.api import ids
from gateway.api.context import Context
from gateway.api.errors import InvalidInput, LimitExceeded
from gateway.api.types import AsOf, BoardResult, PlayerContext, RankedPlayer, RankPage
from regions.core.boards import Board
from regions.core.periods import WindowSpec
from regions.core.reads import Scope
from regions.core.rollover import current_period


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


async def top(info: Info[Context, None], board: Board, k: int | None, scope: Scope | None) -> RankPage:
    services = info.context.services
    k = 10 if k is None else k
    problem = services.limits.check_k(k)
    if problem is not None:
        raise LimitExceeded(problem)
    return RankPage.of(await services.projections.top(board, k, scope or Scope.HOME))


async def player(
    info: Info[Context, None], board: Board, user_id: strawberry.ID, scope: Scope | None
) -> RankedPlayer | None:
    user = ids.user_id("userId", str(user_id))
    entry, as_of = await info.context.services.projections.player(board, user, scope or Scope.HOME)
    return None if entry is None else RankedPlayer.of(entry, AsOf.of(as_of))


async def context(
    info: Info[Context, None], board: Board, user_id: strawberry.ID, range: int | None, scope: Scope | None
) -> PlayerContext | None:
    services = info.context.services
    range = 4 if range is None else range
    problem = services.limits.check_range(range)
    if problem is not None:
        raise LimitExceeded(problem)
    user = ids.user_id("userId", str(user_id))
    found = await services.projections.context(board, user, range, scope or Scope.HOME)
    return None if found is None else PlayerContext.of(found)


async def player_count(info: Info[Context, None], board: Board, scope: Scope | None) -> int:
    return await info.context.services.projections.player_count(board, scope or Scope.HOME)


async def result(info: Info[Context, None], board: Board, version: int | None) -> BoardResult | None:
    header = await info.context.services.cassandra.adapter.results.get(board.id, version)
    return None if header is None else BoardResult(header=header)
