"""The ``Leaderboard`` type: a board's definition and its reads (each with asOf)."""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from gateway.api import board_reads, fields
from gateway.api import periods as period_reads
from gateway.api.context import Context
from gateway.api.periods import LeaderboardPeriod
from gateway.api.types import (
    BoardResult,
    BoardWindow,
    PlayerContext,
    RankedPlayer,
    RankPage,
)
from regions.core.boards import Aggregation, Board, BoardStatus, SortOrder, TiePolicy
from regions.core.reads import Scope


@strawberry.type
class Leaderboard:
    board: strawberry.Private[Board]

    @strawberry.field
    def id(self) -> strawberry.ID:
        return strawberry.ID(self.board.id)

    @strawberry.field
    def name(self) -> str:
        return self.board.name

    @strawberry.field
    def home_region(self) -> str:
        return self.board.home_region

    @strawberry.field
    def status(self) -> BoardStatus:
        return self.board.status

    @strawberry.field
    def sort_order(self) -> SortOrder:
        return self.board.sort_order

    @strawberry.field
    def aggregation(self) -> Aggregation:
        return self.board.aggregation

    @strawberry.field
    def tie_policy(self) -> TiePolicy:
        return self.board.tie_policy

    @fields.field("The board's time window; null for an all-time board.")
    def window(self) -> BoardWindow | None:
        return BoardWindow.of(self.board.window_spec)

    @fields.field(
        "Players with a score in the projection of `scope` (HOME: the board's home region's); on a board "
        "with periods, in the current period."
    )
    async def player_count(self, info: Info[Context, None], scope: Scope | None = Scope.HOME) -> int:
        return await board_reads.player_count(info, board_reads.current(self.board, info), scope)

    @fields.field(
        "The best k players (on a board with periods: of the current period); k is capped "
        "(gateway.max_top_k, default 100)."
    )
    async def top(
        self, info: Info[Context, None], k: int | None = 10, scope: Scope | None = Scope.HOME
    ) -> RankPage:
        return await board_reads.top(info, board_reads.current(self.board, info), k, scope)

    @fields.field(
        "The player's exact rank (on a board with periods: in the current period); null when the player has no score."
    )
    async def player(
        self, info: Info[Context, None], user_id: strawberry.ID, scope: Scope | None = Scope.HOME
    ) -> RankedPlayer | None:
        return await board_reads.player(info, board_reads.current(self.board, info), user_id, scope)

    @fields.field(
        "The player with up to `range` neighbours each side (fewer at a boundary); "
        "range is capped (gateway.max_context_range, default 50); null when the player has no score."
    )
    async def context(
        self,
        info: Info[Context, None],
        user_id: strawberry.ID,
        range: int | None = 4,
        scope: Scope | None = Scope.HOME,
    ) -> PlayerContext | None:
        return await board_reads.context(info, board_reads.current(self.board, info), user_id, range, scope)

    @fields.field("An archived result of a closed board; the newest when version is null.")
    async def result(self, info: Info[Context, None], version: int | None = None) -> BoardResult | None:
        return await board_reads.result(info, self.board, version)

    @fields.field(
        "A period of a board with calendar periods: the current one when key is null; null when the "
        "board has no period of that key (before its first, or not begun). A ROLLING or all-time board "
        "has no periods: BAD_USER_INPUT."
    )
    async def period(self, info: Info[Context, None], key: str | None = None) -> LeaderboardPeriod | None:
        return await period_reads.period(info, self.board, key)

    @fields.field(
        "Up to `first` periods, newest first: from the current one, or from the one before the period "
        "`before`, back to the board's first; first is capped (gateway.max_top_k, default 100)."
    )
    async def periods(
        self, info: Info[Context, None], first: int | None = 10, before: str | None = None
    ) -> list[LeaderboardPeriod]:
        return await period_reads.periods(info, self.board, first, before)
