"""The ``Leaderboard`` type: a board's definition and its reads (each with asOf)."""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from gateway.api import board_reads, fields, paging
from gateway.api import periods as period_reads
from gateway.api.context import Context
from gateway.api.periods import LeaderboardPeriod
from gateway.api.types import ApproximateSettings, BoardWindow
from regions.core.boards import Aggregation, Board, BoardStatus, Consistency, SortOrder, TiePolicy


@strawberry.type
class Leaderboard(board_reads.RankedBoard):
    board: strawberry.Private[Board]

    def ranked_board(self, info: Info[Context, None]) -> Board:
        return board_reads.current(self.board, info)

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

    @fields.field(
        "Where the board's awards are accepted: REGIONAL, by the region that received them; HOME_ROUTED, "
        "by the home region only."
    )
    def consistency(self) -> Consistency:
        return self.board.consistency

    @fields.field("How many shards the board's players are spread over (1: one sorted set).")
    def shards(self) -> int:
        return self.board.shards

    @fields.field(
        "An approximate (trending) board's settings: its top(k) answers estimates; null for an exact board."
    )
    def approximate(self) -> ApproximateSettings | None:
        spec = self.board.approximate
        return None if spec is None else ApproximateSettings(k=spec.k, epsilon=spec.epsilon, delta=spec.delta)

    @fields.field("The board's time window; null for an all-time board.")
    def window(self) -> BoardWindow | None:
        return BoardWindow.of(self.board.window_spec)

    player_count = board_reads.player_count(
        "Players with a score in the projection of `scope` (HOME: the board's home region's); on a board "
        "with periods, in the current period."
    )
    top = board_reads.top(
        "The best k players (on a board with periods: of the current period); k is capped "
        "(gateway.max_top_k, default 100)."
    )
    player = board_reads.player(
        "The player's exact rank (on a board with periods: in the current period); null when the player has no score."
    )
    context = board_reads.context(
        "The player with up to `range` neighbours each side (fewer at a boundary); "
        "range is capped (gateway.max_context_range, default 50); null when the player has no score."
    )
    players = board_reads.players(
        "Up to gateway.max_listed_players (default 100) players by id: their ranks on the whole board (on a board "
        "with periods: the current period), in rank order; players without a score last, in the order "
        "given. Each id is answered once, however often it is listed."
    )
    result = board_reads.result("An archived result of a closed board; the newest when version is null.")
    entries = paging.entries(
        "Ranked players page by page (on a board with periods: in the current period): `first` after "
        "`after` (or from `fromRank`, 1-based), or `last` before `before`; first and last are capped "
        "(gateway.max_top_k, default page 100)."
    )

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
