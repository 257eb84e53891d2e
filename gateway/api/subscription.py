"""``leaderboardUpdates``: live hints for one board (and optionally one player).

Every update carries the board's hint sequence; a ``Resync`` tells the client it missed updates
(it was too slow, or the upstream feed had a gap) and should refetch with a query.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Annotated

import strawberry
from strawberry.types import Info

from gateway import metrics
from gateway.api import fields, ids
from gateway.api.context import Context
from gateway.api.errors import HomeUnavailable, NotFound, SubscriptionLimit
from gateway.api.scalars import Long
from gateway.api.types import AsOf
from gateway.core import updates
from gateway.core.feed import TooManyPlayers
from gateway.hub import FeedUnavailable
from gateway.projections import HomeUnreachable
from regions.core.boards import BoardStatus
from regions.core.reads import Scope


@strawberry.type(description="The subscribed player's total changed.")
class ScoreUpdated:
    leaderboard_id: strawberry.ID
    user_id: strawberry.ID
    score: Long
    rank: int | None
    version: Long
    sequence: Long
    as_of: AsOf


@strawberry.type(description="The subscribed player's rank changed (null: no score).")
class RankChanged:
    leaderboard_id: strawberry.ID
    user_id: strawberry.ID
    old_rank: int | None
    new_rank: int | None
    sequence: Long
    as_of: AsOf


@strawberry.type(description="The board's top k changed; refetch it with a query.")
class TopKChanged:
    leaderboard_id: strawberry.ID
    k: int
    sequence: Long
    as_of: AsOf


@strawberry.type(description="Updates were missed (slow subscriber, upstream gap): refetch with queries.")
class Resync:
    leaderboard_id: strawberry.ID
    reason: str
    sequence: Long


@strawberry.type(
    description="The board began closing (CLOSING), closed (CLOSED, result version 1) or has a new result "
    "version (a correction); refetch what depends on it."
)
class BoardStatusChanged:
    leaderboard_id: strawberry.ID
    status: BoardStatus
    result_version: int | None = strawberry.field(description="The newest result version; null until CLOSED.")
    sequence: Long


Update = ScoreUpdated | RankChanged | TopKChanged | Resync | BoardStatusChanged
LeaderboardUpdate = Annotated[Update, strawberry.union("LeaderboardUpdate")]


def to_graphql(update: updates.Update) -> Update:
    board = strawberry.ID(update.board_id)
    seq = Long(update.sequence)
    match update:
        case updates.ScoreUpdate():
            return ScoreUpdated(
                leaderboard_id=board, user_id=strawberry.ID(update.user_id), score=Long(update.score),
                rank=update.rank, version=Long(update.version), sequence=seq, as_of=AsOf.of(update.as_of),
            )  # fmt: skip
        case updates.RankChange():
            return RankChanged(
                leaderboard_id=board, user_id=strawberry.ID(update.user_id), old_rank=update.old_rank,
                new_rank=update.new_rank, sequence=seq, as_of=AsOf.of(update.as_of),
            )  # fmt: skip
        case updates.TopKChange():
            return TopKChanged(leaderboard_id=board, k=update.k, sequence=seq, as_of=AsOf.of(update.as_of))
        case updates.ResyncNeeded():
            return Resync(leaderboard_id=board, reason=update.reason, sequence=seq)
        case updates.StatusChange():
            return BoardStatusChanged(leaderboard_id=board, status=BoardStatus(update.status),
                                      result_version=update.result_version, sequence=seq)  # fmt: skip


@strawberry.type
class Subscription:
    @fields.subscription(
        "Hints for a board: TopKChanged when its top 10 changes, BoardStatusChanged when it closes or "
        "is corrected and, with userId, ScoreUpdated and RankChanged for that player; from the "
        "projection of `scope` (HOME: the board's home region's, HOME_UNAVAILABLE when it cannot be "
        "reached)."
    )
    async def leaderboard_updates(
        self,
        info: Info[Context, None],
        leaderboard_id: strawberry.ID,
        user_id: strawberry.ID | None = None,
        scope: Scope | None = Scope.HOME,
    ) -> AsyncGenerator[LeaderboardUpdate, None]:
        services = info.context.services
        board_id = ids.board_id("leaderboardId", str(leaderboard_id))
        user = None if user_id is None else ids.user_id("userId", str(user_id))
        board = await services.boards.get(board_id)
        if board is None:
            raise NotFound(f"leaderboard {board_id!r} does not exist")
        try:
            hub = services.hubs[services.projections.region_for(board, scope or Scope.HOME)]
            async with hub.subscribe(board, user) as mailbox:
                while True:
                    for update in await mailbox.next_batch():
                        metrics.UPDATES_SENT.inc()
                        yield to_graphql(update)
        except TooManyPlayers as exc:
            raise SubscriptionLimit(f"this gateway follows too many players of {board.id!r}") from exc
        except (HomeUnreachable, FeedUnavailable) as exc:
            raise HomeUnavailable(
                f"{exc}; subscribe with scope: REGIONAL for this region's projection"
            ) from exc
