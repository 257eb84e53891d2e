"""When windowed boards' periods close and rolling boards' days expire, and which periods a board
has. Pure: time is an argument (``now_ms``, the clock of the home region's lifecycle worker).

- A board's first period is the one that held ``created_at - grace``: at creation the intake still
  accepts the awards of that period, so it must be closed like any later one.
- A period is due to close once ``end + grace`` has passed; the next period needs nothing to be live
  (its awards simply count in it). Periods are closed in order, each once.
- A rolling board's days expire at the local midnight that ends them plus the window's length: the
  expiry markers say "every day up to D has left", so one marker covers any days missed meanwhile.
"""

from __future__ import annotations

from regions.core.periods import (
    InvalidPeriodKey,
    PeriodSpan,
    WindowSpec,
    expired_through,
    next_period,
    parse_key,
    period_of,
    previous_period,
)


def first_period(spec: WindowSpec, created_at_ms: int, grace_ms: int) -> PeriodSpan:
    return period_of(spec, created_at_ms - grace_ms)


def periods_to_close(
    spec: WindowSpec, *, newest_key: str | None, created_at_ms: int, now_ms: int, grace_ms: int, limit: int
) -> list[PeriodSpan]:
    """The periods after the newest one already closing or closed (``newest_key``; None: none yet)
    whose grace has passed, oldest first, at most ``limit``."""
    span = first_period(spec, created_at_ms, grace_ms)
    if newest_key is not None:
        span = next_period(spec, parse_key(spec, newest_key))
    due: list[PeriodSpan] = []
    while span.end_ms + grace_ms <= now_ms and len(due) < limit:
        due.append(span)
        span = next_period(spec, span)
    return due


def expiry_due(spec: WindowSpec, recorded: int | None, now_ms: int) -> int | None:
    """The day up to which expiry markers must be written now, or None when ``recorded`` covers it."""
    target = expired_through(spec, now_ms)
    return target if recorded is None or target > recorded else None


def current_period(spec: WindowSpec, now_ms: int) -> PeriodSpan:
    return period_of(spec, now_ms)


def periods_page(
    spec: WindowSpec, *, created_at_ms: int, now_ms: int, grace_ms: int, before: str | None, first: int
) -> list[PeriodSpan]:
    """Up to ``first`` of the board's periods, newest first: from the current one (or the one
    before the period ``before``) back to the board's first period."""
    oldest = first_period(spec, created_at_ms, grace_ms)
    span = current_period(spec, now_ms)
    if before is not None:
        span = previous_period(spec, parse_key(spec, before))
        span = min(span, current_period(spec, now_ms), key=lambda s: s.start_ms)
    page: list[PeriodSpan] = []
    while len(page) < first and span.start_ms >= oldest.start_ms:
        page.append(span)
        span = previous_period(spec, span)
    return page


def is_board_period(spec: WindowSpec, key: str, *, created_at_ms: int, now_ms: int, grace_ms: int) -> bool:
    """Whether ``key`` names one of the board's periods so far (from its first to the current);
    ``InvalidPeriodKey`` when it names no period at all."""
    span = parse_key(spec, key)
    if span.start_ms < first_period(spec, created_at_ms, grace_ms).start_ms:
        return False
    return span.start_ms <= current_period(spec, now_ms).start_ms


__all__ = [
    "InvalidPeriodKey",
    "current_period",
    "expiry_due",
    "first_period",
    "is_board_period",
    "periods_page",
    "periods_to_close",
]
