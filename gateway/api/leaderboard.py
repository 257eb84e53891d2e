"""The ``Leaderboard`` type: a board's definition and its reads (each with asOf)."""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from gateway.api import fields, ids
from gateway.api.context import Context
from gateway.api.errors import LimitExceeded
from gateway.api.types import (
    AsOf,
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

    @fields.field("How many shards the board's players are spread over (1: one sorted set).")
    def shards(self) -> int:
        return self.board.shards

    @fields.field("The board's time window; null for an all-time board.")
    def window(self) -> BoardWindow | None:
        return BoardWindow.of(self.board.window)

    @fields.field("Players with a score in the projection of `scope` (HOME: the board's home region's).")
    async def player_count(self, info: Info[Context, None], scope: Scope | None = Scope.HOME) -> int:
        return await info.context.services.projections.player_count(self.board, scope or Scope.HOME)

    @fields.field("The best k players; k is capped (gateway.max_top_k, default 100).")
    async def top(
        self, info: Info[Context, None], k: int | None = 10, scope: Scope | None = Scope.HOME
    ) -> RankPage:
        services = info.context.services
        k = 10 if k is None else k
        problem = services.limits.check_k(k)
        if problem is not None:
            raise LimitExceeded(problem)
        return RankPage.of(await services.projections.top(self.board, k, scope or Scope.HOME))

    @fields.field("The player's exact rank; null when the player has no score.")
    async def player(
        self, info: Info[Context, None], user_id: strawberry.ID, scope: Scope | None = Scope.HOME
    ) -> RankedPlayer | None:
        user = ids.user_id("userId", str(user_id))
        entry, as_of = await info.context.services.projections.player(self.board, user, scope or Scope.HOME)
        return None if entry is None else RankedPlayer.of(entry, AsOf.of(as_of))

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
        services = info.context.services
        range = 4 if range is None else range
        problem = services.limits.check_range(range)
        if problem is not None:
            raise LimitExceeded(problem)
        user = ids.user_id("userId", str(user_id))
        found = await services.projections.context(self.board, user, range, scope or Scope.HOME)
        return None if found is None else PlayerContext.of(found)

    @fields.field("An archived result of a closed board; the newest when version is null.")
    async def result(self, info: Info[Context, None], version: int | None = None) -> BoardResult | None:
        header = await info.context.services.cassandra.adapter.results.get(self.board.id, version)
        return None if header is None else BoardResult(header=header)
