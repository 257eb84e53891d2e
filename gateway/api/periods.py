"""``LeaderboardPeriod``: one period of a board with calendar periods, ranked on its own."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import strawberry
from strawberry.types import Info

from gateway.api import board_reads, fields, paging
from gateway.api.context import Context
from gateway.api.errors import InvalidInput, LimitExceeded
from regions.core.boards import Board, BoardStatus
from regions.core.periods import InvalidPeriodKey, PeriodSpan, parse_key
from regions.core.rollover import current_period, is_board_period, periods_page
from regions.stores.cassandra.periods import PeriodRecord


def _time(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


@strawberry.type(
    description="One period of a board with calendar periods (DAILY, WEEKLY, MONTHLY): its own totals, "
    "ranks and asOf, closed and archived by itself once it has ended and its grace has passed."
)
class LeaderboardPeriod(board_reads.RankedBoard):
    board: strawberry.Private[Board]  # the period's board, <board>@<key>
    span: strawberry.Private[PeriodSpan]
    record: strawberry.Private[PeriodRecord | None]
    due: strawberry.Private[bool]  # its end plus the grace has passed: it takes no more awards

    def ranked_board(self, info: Info[Context, None]) -> Board:
        info.context.read_board(self.board.id)
        return self.board

    @fields.field("The period's key: 2026-11-30 (DAILY), 2026-W49 (WEEKLY), 2026-11 (MONTHLY).")
    def key(self) -> str:
        return self.span.key

    @fields.field("When the period begins (inclusive), in the board's time zone's calendar.")
    def starts_at(self) -> datetime:
        return _time(self.span.start_ms)

    @fields.field("When the period ends (exclusive): the next period's start.")
    def ends_at(self) -> datetime:
        return _time(self.span.end_ms)

    @fields.field(
        "OPEN while it takes awards (its end plus the grace has not passed), CLOSING from then on while "
        "its cutoffs are written and reached, CLOSED once its result version 1 is archived."
    )
    def status(self) -> BoardStatus:
        if self.record is not None:
            return self.record.status
        return BoardStatus.CLOSING if self.due else BoardStatus.OPEN  # the home worker is about to close it

    top = board_reads.top("The period's best k players; k is capped (gateway.max_top_k, default 100).")
    player = board_reads.player(
        "The player's exact rank in the period; null when the player has no score in it."
    )
    context = board_reads.context("The player with up to `range` neighbours each side, in the period.")
    player_count = board_reads.player_count(
        "Players with a score in the period, in the projection of `scope`."
    )
    players = board_reads.players(
        "Up to gateway.max_listed_players (default 100) players by id: their ranks in the period, in rank order; "
        "players without a score last, in the order given. Each id is answered once, however often it is listed."
    )
    result = board_reads.result(
        "The period's archived result once it is CLOSED; the newest when version is null."
    )
    entries = paging.entries(
        "The period's ranked players page by page: `first` after `after` (or from `fromRank`, 1-based), "
        "or `last` before `before`; first and last are capped (gateway.max_top_k, default page 100)."
    )


async def period(info: Info[Context, None], board: Board, key: str | None) -> LeaderboardPeriod | None:
    """The board's period ``key`` (the current one when None); None when the board has no such
    period (before its first, or not begun)."""
    spec = board_reads.periods_of(board, "period")
    now = board_reads.now_ms(info)
    if key is None:
        span = current_period(spec, now)
    else:
        periods = info.context.services.cassandra.adapter.periods
        created = await periods.created_at_ms(board.id)
        try:
            if not is_board_period(spec, key, created_at_ms=created or now, now_ms=now,
                                   grace_ms=board_reads.grace_ms(info)):  # fmt: skip
                return None
            span = parse_key(spec, key)
        except InvalidPeriodKey as exc:
            raise InvalidInput(f"key: {exc}") from exc
    return (await _with_records(info, board, [span]))[0]


async def periods(
    info: Info[Context, None], board: Board, first: int | None, before: str | None
) -> list[LeaderboardPeriod]:
    """Up to ``first`` periods, newest first, from the current one (or the one before ``before``)
    back to the board's first."""
    spec = board_reads.periods_of(board, "periods")
    first = 10 if first is None else first
    problem = info.context.services.limits.check_k(first)
    if problem is not None:
        raise LimitExceeded(problem.replace("k must", "first must"))
    if before is not None:
        try:
            parse_key(spec, before)
        except InvalidPeriodKey as exc:
            raise InvalidInput(f"before: {exc}") from exc
    now = board_reads.now_ms(info)
    created = await info.context.services.cassandra.adapter.periods.created_at_ms(board.id)
    spans = periods_page(spec, created_at_ms=created or now, now_ms=now, grace_ms=board_reads.grace_ms(info),
                         before=before, first=first)  # fmt: skip
    return await _with_records(info, board, spans)


async def _with_records(
    info: Info[Context, None], board: Board, spans: list[PeriodSpan]
) -> list[LeaderboardPeriod]:
    if not spans:
        return []
    store = info.context.services.cassandra.adapter.periods
    records = await store.between(board.id, spans[-1].key, spans[0].key)
    closed_before = board_reads.now_ms(info) - board_reads.grace_ms(info)
    return [
        LeaderboardPeriod(
            board=_period_board(board, s, records.get(s.key)),
            span=s,
            record=records.get(s.key),
            due=s.end_ms <= closed_before,
        )
        for s in spans
    ]


def _period_board(board: Board, span: PeriodSpan, record: PeriodRecord | None) -> Board:
    """The period's board; a CLOSED one with its cutoffs, which its reads claim as their asOf."""
    period = board.for_period(span.key)
    if record is None or record.status is not BoardStatus.CLOSED:
        return period
    return replace(period, status=BoardStatus.CLOSED, cutoffs=tuple(sorted(record.cutoffs.items())))
