"""When periods close and rolling days expire, and which periods a board lists."""

from __future__ import annotations

from datetime import datetime

import pytest

from regions.core.periods import InvalidPeriodKey, Period, WindowSpec
from regions.core.rollover import expiry_due, is_board_period, periods_page, periods_to_close

DAILY = WindowSpec(Period.DAILY, time_zone="Europe/Stockholm")
GRACE = 300_000


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def keys(spans: list) -> list[str]:  # type: ignore[type-arg]
    return [s.key for s in spans]


def test_a_period_closes_once_its_grace_has_passed_and_periods_close_in_order() -> None:
    created = ms("2026-11-28T10:00:00+01:00")
    end = ms("2026-11-29T00:00:00+01:00")
    due = lambda now, newest=None: keys(periods_to_close(DAILY, newest_key=newest, created_at_ms=created,  # noqa: E731
                                                         now_ms=now, grace_ms=GRACE, limit=10))  # fmt: skip
    assert due(end + GRACE - 1) == []
    assert due(end + GRACE) == ["2026-11-28"]
    assert due(end + GRACE, newest="2026-11-28") == []
    assert due(ms("2026-12-01T00:05:00+01:00")) == ["2026-11-28", "2026-11-29", "2026-11-30"]
    assert due(ms("2026-12-01T00:05:00+01:00"), newest="2026-11-29") == ["2026-11-30"]


def test_a_board_created_within_the_grace_of_a_period_closes_that_period_too() -> None:
    created = ms("2026-11-29T00:02:00+01:00")  # yesterday's awards are still accepted for 3 minutes
    due = periods_to_close(DAILY, newest_key=None, created_at_ms=created, now_ms=ms("2026-11-30T12:00:00+01:00"),
                           grace_ms=GRACE, limit=10)  # fmt: skip
    assert keys(due) == ["2026-11-28", "2026-11-29"]


def test_expiry_is_due_when_a_day_leaves_the_window() -> None:
    rolling = WindowSpec(Period.ROLLING, 7, "Asia/Tokyo")
    midnight = ms("2026-11-30T00:00:00+09:00")
    before = expiry_due(rolling, None, midnight - 1)
    assert before is not None
    assert expiry_due(rolling, before, midnight - 1) is None
    assert expiry_due(rolling, before, midnight) == before + 1
    assert expiry_due(rolling, before - 3, midnight) == before + 1  # days missed meanwhile: one marker


def test_periods_are_listed_newest_first_from_the_current_back_to_the_first() -> None:
    created, now = ms("2026-11-27T12:00:00+01:00"), ms("2026-11-30T12:00:00+01:00")
    page = lambda before, first: keys(periods_page(DAILY, created_at_ms=created, now_ms=now, grace_ms=GRACE,  # noqa: E731
                                                   before=before, first=first))  # fmt: skip
    assert page(None, 2) == ["2026-11-30", "2026-11-29"]
    assert page("2026-11-29", 10) == ["2026-11-28", "2026-11-27"]
    assert page("2027-01-01", 1) == ["2026-11-30"]  # a key in the future: from the current one
    assert is_board_period(DAILY, "2026-11-27", created_at_ms=created, now_ms=now, grace_ms=GRACE)
    assert not is_board_period(DAILY, "2026-11-26", created_at_ms=created, now_ms=now, grace_ms=GRACE)
    assert not is_board_period(DAILY, "2026-12-01", created_at_ms=created, now_ms=now, grace_ms=GRACE)
    with pytest.raises(InvalidPeriodKey):
        is_board_period(DAILY, "2026-W49", created_at_ms=created, now_ms=now, grace_ms=GRACE)
