"""``leaderboardUpdates``: live hints for one board (and optionally some of its players).

Every update carries the board's hint sequence; a ``Resync`` tells the client it missed updates
(it was too slow, or the upstream feed had a gap) and should refetch with a query.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Annotated

import strawberry
from strawberry.types import Info

from gateway import metrics
from gateway.api import board_reads, fields, ids
from gateway.api.context import Context
from gateway.api.errors import HomeUnavailable, LimitExceeded, NotFound, SubscriptionLimit
from gateway.api.scalars import Long
from gateway.api.types import AsOf
from gateway.core import updates
from gateway.core.feed import TooManyPlayers
from gateway.core.followed import FollowedMerge
from gateway.hub import FeedUnavailable, HintHub
from gateway.projections import HomeUnreachable
from regions.core.boards import Board, BoardStatus
from regions.core.periods import PeriodSpan, WindowSpec
from regions.core.player_lists import distinct
from regions.core.reads import Scope
from regions.core.rollover import current_period
from schema.scoped import split_board_id


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
    "version (a correction); on a board with calendar periods, also when the subscription rolls over to "
    "the next period (`period`, OPEN): refetch what depends on it."
)
class BoardStatusChanged:
    leaderboard_id: strawberry.ID
    status: BoardStatus
    result_version: int | None = strawberry.field(description="The newest result version; null until CLOSED.")
    sequence: Long
    period: str | None = strawberry.field(
        default=None,
        description="On a board with calendar periods, the period this is about: after a rollover, the new "
        "current period, whose updates follow with that period's own sequences (they start again; the "
        "rollover's sequence is the new period's start in microseconds since the epoch). Null otherwise.",
    )


Update = ScoreUpdated | RankChanged | TopKChanged | Resync | BoardStatusChanged
LeaderboardUpdate = Annotated[Update, strawberry.union("LeaderboardUpdate")]


def _rolled_over(board: Board, span: PeriodSpan) -> BoardStatusChanged:
    return BoardStatusChanged(leaderboard_id=strawberry.ID(board.id), status=BoardStatus.OPEN,
                              result_version=None, sequence=Long(span.start_ms * 1000), period=span.key)  # fmt: skip


def to_graphql(update: updates.Update) -> Update:
    """The update as the client sees it: a period's updates are its board's (``period`` names it)."""
    base, period = split_board_id(update.board_id)
    board = strawberry.ID(base)
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
                                      result_version=update.result_version, sequence=seq, period=period)  # fmt: skip


@strawberry.type
class Subscription:
    @fields.subscription(
        "Hints for a board: TopKChanged when its top 10 changes, BoardStatusChanged when it closes or "
        "is corrected and, with userId or userIds (at most gateway.max_followed_players, default 50, "
        "each once), ScoreUpdated and RankChanged for those players; from the "
        "projection of `scope` (HOME: the board's home region's, HOME_UNAVAILABLE when it cannot be "
        "reached). On a board with calendar periods they follow the current period, and "
        "BoardStatusChanged with its `period` says when it rolls over."
    )
    async def leaderboard_updates(
        self,
        info: Info[Context, None],
        leaderboard_id: strawberry.ID,
        user_id: strawberry.ID | None = None,
        scope: Scope | None = Scope.HOME,
        user_ids: list[strawberry.ID] | None = None,
    ) -> AsyncGenerator[LeaderboardUpdate, None]:
        services = info.context.services
        board_id = ids.board_id("leaderboardId", str(leaderboard_id))
        users = _followed_users(info, user_id, user_ids or [])
        board = await services.boards.get(board_id)
        if board is None:
            raise NotFound(f"leaderboard {board_id!r} does not exist")
        try:
            hub = services.hubs[services.projections.region_for(board, scope or Scope.HOME)]
            spec = board.window_spec
            if spec is None or spec.rolling:
                async with _subscribed(hub, board, users) as next_batch:
                    while True:
                        for update in await next_batch():
                            metrics.UPDATES_SENT.inc()
                            yield to_graphql(update)
            else:
                async for item in _follow_periods(info, hub, board, spec, users):
                    yield item
        except TooManyPlayers as exc:
            raise SubscriptionLimit(f"this gateway follows too many players of {board.id!r}") from exc
        except (HomeUnreachable, FeedUnavailable) as exc:
            raise HomeUnavailable(
                f"{exc}; subscribe with scope: REGIONAL for this region's projection"
            ) from exc


def _followed_users(
    info: Info[Context, None], user_id: strawberry.ID | None, user_ids: list[strawberry.ID]
) -> list[str]:
    """The players a subscription follows: ``userId`` and ``userIds``, each once."""
    limits = info.context.services.limits
    problem = limits.check_players("userIds", len(user_ids), limits.max_followed_players)
    if problem is not None:
        raise LimitExceeded(problem)
    users = [] if user_id is None else [ids.user_id("userId", str(user_id))]
    users += [ids.user_id(f"userIds[{i}]", str(u)) for i, u in enumerate(user_ids)]
    return distinct(users)


Batches = Callable[[], Awaitable[list[updates.Update]]]


@contextlib.asynccontextmanager
async def _subscribed(hub: HintHub, board: Board, users: list[str]) -> AsyncIterator[Batches]:
    """The board's updates for ``users`` (none: the board's own only) as batches: one mailbox per
    player, merged (``gateway.core.followed``)."""
    async with contextlib.AsyncExitStack() as stack:
        followed: list[str | None] = [*users] if users else [None]
        boxes = [await stack.enter_async_context(hub.subscribe(board, u)) for u in followed]
        if len(boxes) == 1:
            yield boxes[0].next_batch
            return
        merge, waits = FollowedMerge(), dict[asyncio.Future[list[updates.Update]], int]()

        async def next_batch() -> list[updates.Update]:
            for i in set(range(len(boxes))) - set(waits.values()):
                waits[asyncio.ensure_future(boxes[i].next_batch())] = i
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            await asyncio.sleep(0)  # the other mailboxes' updates of the same round
            return merge.batch([(waits.pop(w), w.result()) for w in list(waits) if w.done()])

        try:
            yield next_batch
        finally:
            for wait in waits:
                wait.cancel()


async def _follow_periods(
    info: Info[Context, None], hub: HintHub, board: Board, spec: WindowSpec, users: list[str]
) -> AsyncGenerator[LeaderboardUpdate, None]:
    """The current period's updates; at its end (the gateway's clock) a rollover notice and the next's."""
    rolled = False
    span = current_period(spec, board_reads.now_ms(info))
    while True:
        async with _subscribed(hub, board.for_period(span.key), users) as next_batch:
            if rolled:
                metrics.UPDATES_SENT.inc()
                yield _rolled_over(board, span)
            while (left := span.end_ms - board_reads.now_ms(info)) > 0:
                try:
                    batch = await asyncio.wait_for(next_batch(), left / 1000)
                except TimeoutError:
                    break
                for update in batch:
                    metrics.UPDATES_SENT.inc()
                    yield to_graphql(update)
        # the next period, even when the timer fired a hair before the end
        rolled, span = True, current_period(spec, max(board_reads.now_ms(info), span.end_ms))
