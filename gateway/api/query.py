"""Root query: boards by id or status."""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from gateway.api import fields, ids
from gateway.api.context import Context
from gateway.api.leaderboard import Leaderboard
from gateway.api.moderation import ModerationQuery
from regions.core.boards import BoardStatus


@strawberry.type
class Query(ModerationQuery):
    @fields.field("A board by id; null when there is none.")
    async def leaderboard(self, info: Info[Context, None], id: strawberry.ID) -> Leaderboard | None:
        board_id = ids.board_id("id", str(id))
        info.context.read_board(board_id)
        board = await info.context.services.boards.get(board_id)
        return None if board is None else Leaderboard(board=board)

    @fields.field("Every board, or those with the given status.")
    async def leaderboards(
        self, info: Info[Context, None], status: BoardStatus | None = None
    ) -> list[Leaderboard]:
        info.context.cacheable = False
        return [Leaderboard(board=b) for b in await info.context.services.boards.all(status)]
