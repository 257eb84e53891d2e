"""``leaderboardUpdates``: live hints for one board (and optionally one player).

Every update carries the board's hint sequence; a ``Resync`` tells the client it missed updates
(it was too slow, or the upstream feed had a gap) and should refetch with a query.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from datetime import UTC, datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from gateway import metrics
from gateway.api import board_reads, fields, ids
from gateway.api.context import Context
from gateway.api.errors import HomeUnavailable, NotFound, SubscriptionLimit
from gateway.api.scalars import Long
from gateway.api.types import AsOf
from gateway.core import updates
from gateway.core.feed import TooManyPlayers
from gateway.hub import FeedUnavailable, HintHub
from gateway.projections import HomeUnreachable
from regions.core.boards import Board
from regions.core.periods import PeriodSpan, WindowSpec
from regions.core.reads import Scope
from regions.core.rollover import current_period


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
    description="A board with calendar periods rolled over: the subscription now follows the period `period`. "
    "The updates after it are the new period's, and their sequences are that period's own (they start "
    "again): refetch with queries. `sequence` is the new period's start in microseconds since the epoch."
)
class PeriodChanged:
    leaderboard_id: strawberry.ID
    period: str
    starts_at: datetime
    ends_at: datetime
    previous_period: str
    sequence: Long


LeaderboardUpdate = Annotated[
    ScoreUpdated | RankChanged | TopKChanged | Resync | PeriodChanged, strawberry.union("LeaderboardUpdate")
]


def _period_changed(board: Board, span: PeriodSpan, previous: PeriodSpan) -> PeriodChanged:
    return PeriodChanged(
        leaderboard_id=strawberry.ID(board.id), period=span.key,
        starts_at=datetime.fromtimestamp(span.start_ms / 1000, UTC),
        ends_at=datetime.fromtimestamp(span.end_ms / 1000, UTC), previous_period=previous.key,
        sequence=Long(span.start_ms * 1000),
    )  # fmt: skip


def to_graphql(
    update: updates.Update, board_id: str | None = None
) -> ScoreUpdated | RankChanged | TopKChanged | Resync:
    """The update as the client sees it; ``board_id`` names the board subscribed to (a period's
    updates are the board's)."""
    board = strawberry.ID(board_id or update.board_id)
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


@strawberry.type
class Subscription:
    @fields.subscription(
        "Hints for a board: TopKChanged when its top 10 changes and, with userId, "
        "ScoreUpdated and RankChanged for that player; from the projection of `scope` (HOME: the "
        "board's home region's, HOME_UNAVAILABLE when it cannot be reached). On a board with calendar "
        "periods they follow the current period, and PeriodChanged says when it rolls over."
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
            spec = board.window_spec
            if spec is None or spec.rolling:
                async with hub.subscribe(board, user) as mailbox:
                    while True:
                        for update in await mailbox.next_batch():
                            metrics.UPDATES_SENT.inc()
                            yield to_graphql(update)
            else:
                async for item in _follow_periods(info, hub, board, spec, user):
                    yield item
        except TooManyPlayers as exc:
            raise SubscriptionLimit(f"this gateway follows too many players of {board.id!r}") from exc
        except (HomeUnreachable, FeedUnavailable) as exc:
            raise HomeUnavailable(
                f"{exc}; subscribe with scope: REGIONAL for this region's projection"
            ) from exc


async def _follow_periods(
    info: Info[Context, None], hub: HintHub, board: Board, spec: WindowSpec, user: str | None
) -> AsyncGenerator[LeaderboardUpdate, None]:
    """The current period's updates; at its end (the gateway's clock), ``PeriodChanged`` and the next's."""
    previous: PeriodSpan | None = None
    span = current_period(spec, board_reads.now_ms(info))
    while True:
        async with hub.subscribe(board.for_period(span.key), user) as mailbox:
            if previous is not None:
                metrics.UPDATES_SENT.inc()
                yield _period_changed(board, span, previous)
            while (left := span.end_ms - board_reads.now_ms(info)) > 0:
                try:
                    batch = await asyncio.wait_for(mailbox.next_batch(), left / 1000)
                except TimeoutError:
                    break
                for update in batch:
                    metrics.UPDATES_SENT.inc()
                    yield to_graphql(update, board.id)
        # the next period, even when the timer fired a hair before the end
        previous, span = span, current_period(spec, max(board_reads.now_ms(info), span.end_ms))
