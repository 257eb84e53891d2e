"""Keyset pages of a ranked board (``Leaderboard.entries``, ``LeaderboardPeriod.entries``): the
types and the one declaration both types take, as ``gateway.api.board_reads`` declares its reads.

The rules (cursors, combinations, the merge of shards) are ``regions.core.paging``'s; a page is read
with asOf as ``top`` is, from the projection of its scope, and never cached.
"""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from gateway.api.board_reads import RankedBoard, exact_only
from gateway.api.context import Context
from gateway.api.errors import InvalidInput, LimitExceeded
from gateway.api.types import AsOf, RankedPlayer
from regions.core import paging, reads
from regions.core.boards import Board
from regions.core.reads import Scope


@strawberry.type(description="Where a page is in its board; pass a cursor as after or before to read on.")
class PageInfo:
    start_cursor: str | None = strawberry.field(
        description="The page's first entry's position; null when empty."
    )
    end_cursor: str | None = strawberry.field(
        description="The page's last entry's position; null when empty."
    )
    has_next_page: bool = strawberry.field(description="Entries are ranked after the page.")
    has_previous_page: bool = strawberry.field(description="Entries are ranked before the page.")


@strawberry.type(description="A page of ranked players, in rank order, with contiguous ranks.")
class RankConnection:
    entries: list[RankedPlayer]
    page_info: PageInfo
    total_count: int = strawberry.field(
        description="Players with a score in the board when the page was read."
    )
    as_of: AsOf

    @staticmethod
    def of(board: Board, page: paging.Page, as_of: reads.AsOf) -> RankConnection:
        rows = page.rows
        return RankConnection(
            entries=[RankedPlayer.of(e) for e in paging.page_entries(board, page)],
            page_info=PageInfo(
                start_cursor=paging.encode_cursor(board.id, rows[0]) if rows else None,
                end_cursor=paging.encode_cursor(board.id, rows[-1]) if rows else None,
                has_next_page=page.has_next,
                has_previous_page=page.has_previous,
            ),
            total_count=page.total,
            as_of=AsOf.of(as_of),
        )


async def _entries(
    self: RankedBoard,
    info: Info[Context, None],
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
    from_rank: int | None = None,
    scope: Scope | None = Scope.HOME,
) -> RankConnection:
    board, services = self.ranked_board(info), info.context.services
    exact_only(board)
    try:
        request = paging.page_request(
            board.id, first, after, last, before, from_rank, services.limits.max_top_k
        )
    except paging.PagingError as exc:
        raise (LimitExceeded if exc.limit else InvalidInput)(str(exc)) from None
    page, as_of = await services.projections.page(board, request, scope or Scope.HOME)
    return RankConnection.of(board, page, as_of)


def entries(description: str) -> RankConnection:
    """``entries(first, after, last, before, fromRank, scope: Scope = HOME): RankConnection!``; first
    and last over ``gateway.max_top_k``: LIMIT_EXCEEDED; any other rule broken: BAD_USER_INPUT."""
    return strawberry.field(resolver=_entries, description=description)
