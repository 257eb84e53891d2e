"""Period maths against a reference model that shares none of its arithmetic.

The core builds a period from local dates (local midnight turned into an instant, DST jumps found
where midnight is skipped). The reference only ever turns instants into local dates: a period's
index is the running maximum of the calendar index of the local date (time never goes back), and
its start and end are found by bisecting UTC time for where that index changes. Week keys come from
counting weeks from week 1 of each year, and for Monday weeks from Python's ISO calendar.
"""

from __future__ import annotations

import zoneinfo
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from regions.core.periods import (
    InvalidPeriodKey,
    InvalidWindow,
    Period,
    PeriodSpan,
    Weekday,
    WindowSpec,
    day_of,
    expired_through,
    key_error,
    next_period,
    parse_key,
    period_of,
    previous_period,
)
from regions.core.windows import decode_window, encode_window

HOUR = 3600
DST_ZONES = [
    "Europe/Stockholm", "America/New_York", "America/Havana", "America/Sao_Paulo", "Australia/Lord_Howe",
    "America/Santiago", "Asia/Tehran", "Pacific/Apia", "America/Goose_Bay", "Europe/London", "Asia/Kolkata",
    "Pacific/Kiritimati", "America/St_Johns", "UTC",
]  # fmt: skip
ALL_ZONES = sorted(zoneinfo.available_timezones())
zones = st.one_of(st.sampled_from(DST_ZONES), st.sampled_from(ALL_ZONES))
instants = st.integers(
    int(datetime(1971, 1, 1, tzinfo=UTC).timestamp()), int(datetime(2099, 1, 1, tzinfo=UTC).timestamp())
)


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


# ---- the reference model: instants -> local dates only ----------------------------------------


@lru_cache(maxsize=200_000)
def _local(zone: str, second: int) -> date:
    return datetime.fromtimestamp(second, UTC).astimezone(zoneinfo.ZoneInfo(zone)).date()


def _offset(zone: str, second: int) -> timedelta | None:
    return datetime.fromtimestamp(second, UTC).astimezone(zoneinfo.ZoneInfo(zone)).utcoffset()


def _calendar_index(spec: WindowSpec, day: date) -> int:
    if spec.period is Period.MONTHLY:
        return day.year * 12 + day.month - 1
    if spec.period is Period.WEEKLY:  # ordinal 1 (0001-01-01) is a Monday
        return (day.toordinal() - 1 - spec.week_start.number) // 7
    return day.toordinal()


def _backward_jumps(zone: str, low: int, high: int) -> list[int]:
    """Seconds just before each instant in [low, high] where the zone's offset decreases."""
    found, at = [], low
    while at < high:
        step = min(at + HOUR, high)
        before, after = _offset(zone, at), _offset(zone, step)
        if before is not None and after is not None and after < before:
            lo, hi = at, step
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if _offset(zone, mid) == before else (lo, mid)
            found.append(lo)
        at = step
    return found


def ref_index(spec: WindowSpec, second: int) -> int:
    """The running maximum, over the last two days, of the calendar index of the local date."""
    zone = spec.time_zone
    points = [second, *_backward_jumps(zone, second - 48 * HOUR, second)]
    return max(_calendar_index(spec, _local(zone, p)) for p in points)


def _first_second(spec: WindowSpec, low: int, high: int, index: int) -> int:
    """The first second in [low, high] whose reference index is at least ``index``."""
    while high - low > 0:
        middle = (low + high) // 2
        low, high = (middle + 1, high) if ref_index(spec, middle) < index else (low, middle)
    return low


def _ref_week_key(spec: WindowSpec, first: date) -> str:
    def week_one(year: int) -> date:  # the first week with four of its days in ``year``
        start = date(year - 1, 12, 29)
        while start.weekday() != spec.week_start.number:
            start += timedelta(days=1)
        return start

    year = first.year + 1
    while week_one(year) > first:
        year -= 1
    key = f"{year:04d}-W{(first - week_one(year)).days // 7 + 1:02d}"
    if spec.week_start is Weekday.MONDAY:
        iso = first.isocalendar()
        assert key == f"{iso.year:04d}-W{iso.week:02d}"
    return key


def ref_period(spec: WindowSpec, second: int) -> PeriodSpan:
    index = ref_index(spec, second)
    start = _first_second(spec, second - 33 * 24 * HOUR, second, index)
    end = _first_second(spec, second, second + 33 * 24 * HOUR, index + 1)
    if spec.period is Period.MONTHLY:
        key = f"{index // 12:04d}-{index % 12 + 1:02d}"
    elif spec.period is Period.WEEKLY:
        key = _ref_week_key(spec, date.fromordinal(index * 7 + 1 + spec.week_start.number))
    else:
        key = date.fromordinal(index).isoformat()
    return PeriodSpan(key, start * 1000, end * 1000)


# ---- properties -------------------------------------------------------------------------------


def _transition_after(zone: str, second: int) -> int | None:
    """The first instant after ``second`` (within about a year) where the zone's offset changes."""
    at, before = second, _offset(zone, second)
    for _ in range(400):
        step = at + 24 * HOUR
        if _offset(zone, step) != before:
            lo, hi = at, step
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if _offset(zone, mid) == before else (lo, mid)
            return hi
        at = step
    return None


@st.composite
def near_changes(draw: st.DrawFn, zone_names: st.SearchStrategy[str]) -> tuple[str, int]:
    """A zone and an instant within a day and a bit of one of its offset changes (DST, mostly),
    where midnights are skipped, repeated or moved; any instant when the zone has none near."""
    zone, second = draw(zone_names), draw(instants)
    change = _transition_after(zone, second)
    if change is None:
        return zone, second
    return zone, change + draw(st.one_of(st.integers(-26 * HOUR, 26 * HOUR), st.integers(-2, 2)))


specs = st.builds(
    lambda period, zone, first: WindowSpec(period, time_zone=zone,
                                           first_day_of_week=first if period is Period.WEEKLY else None),
    st.sampled_from([Period.DAILY, Period.WEEKLY, Period.MONTHLY]), zones, st.sampled_from(list(Weekday)),
)  # fmt: skip
periods = st.sampled_from([Period.DAILY, Period.WEEKLY, Period.MONTHLY])


@settings(max_examples=150)
@given(specs, instants)
def test_the_period_of_an_instant_equals_the_reference_model(spec: WindowSpec, second: int) -> None:
    assert period_of(spec, second * 1000) == ref_period(spec, second)


@settings(max_examples=300)
@given(periods, near_changes(zones), st.sampled_from(list(Weekday)))
def test_periods_near_dst_changes_equal_the_reference_model(
    period: Period, near: tuple[str, int], first: Weekday
) -> None:
    zone, second = near
    spec = WindowSpec(period, time_zone=zone, first_day_of_week=first if period is Period.WEEKLY else None)
    span = period_of(spec, second * 1000)
    assert span == ref_period(spec, second)
    assert period_of(spec, span.start_ms) == span == period_of(spec, span.end_ms - 1)
    assert period_of(spec, span.end_ms) == next_period(spec, span)


@settings(max_examples=150)
@given(specs, instants)
def test_periods_tile_time_and_their_keys_sort_and_parse(spec: WindowSpec, second: int) -> None:
    span = period_of(spec, second * 1000)
    assert span.holds(second * 1000)
    following, before = next_period(spec, span), previous_period(spec, span)
    assert before.end_ms == span.start_ms and span.end_ms == following.start_ms
    assert before.key < span.key < following.key
    assert previous_period(spec, following) == span == next_period(spec, before)
    assert parse_key(spec, span.key) == span
    # awards exactly at the boundaries: the start is in, the end is the next period's
    assert period_of(spec, span.start_ms) == span == period_of(spec, span.end_ms - 1)
    assert period_of(spec, span.end_ms) == following


@settings(max_examples=100)
@given(zones, instants, st.integers(1, 30))
def test_a_rolling_day_is_the_daily_period_and_expires_after_n_days(
    zone: str, second: int, days: int
) -> None:
    rolling, daily = WindowSpec(Period.ROLLING, days, zone), WindowSpec(Period.DAILY, time_zone=zone)
    today = period_of(daily, second * 1000)
    assert day_of(rolling, second * 1000) == date.fromisoformat(today.key).toordinal()
    assert expired_through(rolling, today.start_ms) == day_of(rolling, today.start_ms) - days
    assert expired_through(rolling, today.start_ms - 1) == expired_through(rolling, today.start_ms) - 1


# ---- explicit boundary vectors ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "instant", "key", "start", "hours"),
    [
        ("Europe/Stockholm", "2026-03-29T12:00:00+02:00", "2026-03-29", "2026-03-29T00:00:00+01:00", 23),
        ("Europe/Stockholm", "2026-10-25T12:00:00+01:00", "2026-10-25", "2026-10-25T00:00:00+02:00", 25),
        ("America/New_York", "2026-03-08T23:59:59-04:00", "2026-03-08", "2026-03-08T00:00:00-05:00", 23),
        ("America/New_York", "2026-11-01T00:00:00-04:00", "2026-11-01", "2026-11-01T00:00:00-04:00", 25),
        ("Australia/Lord_Howe", "2026-04-05T12:00:00+10:30", "2026-04-05", "2026-04-05T00:00:00+11:00", 24.5),
        # Cuba skips midnight: the day begins at the jump, 01:00 daylight time
        ("America/Havana", "2026-03-07T23:59:59-05:00", "2026-03-07", "2026-03-07T00:00:00-05:00", 24),
        ("America/Havana", "2026-03-08T01:00:00-04:00", "2026-03-08", "2026-03-08T01:00:00-04:00", 23),
        # ... and repeats it in the autumn: the day begins at the first midnight
        ("America/Havana", "2026-11-01T00:30:00-05:00", "2026-11-01", "2026-11-01T00:00:00-04:00", 25),
        ("Asia/Kolkata", "2026-11-30T00:00:00+05:30", "2026-11-30", "2026-11-30T00:00:00+05:30", 24),
        ("UTC", "2026-11-29T23:59:59.999+00:00", "2026-11-29", "2026-11-29T00:00:00+00:00", 24),
    ],
)
def test_daily_boundaries_across_dst(zone: str, instant: str, key: str, start: str, hours: float) -> None:
    span = period_of(WindowSpec(Period.DAILY, time_zone=zone), ms(instant))
    assert (span.key, span.start_ms, (span.end_ms - span.start_ms) / 3_600_000) == (key, ms(start), hours)


def test_a_clock_turned_back_across_midnight_does_not_take_time_back() -> None:
    # Goose Bay, 1990-10-28: 00:00:59 daylight time became 23:01 standard time of the 27th
    spec = WindowSpec(Period.DAILY, time_zone="America/Goose_Bay")
    jump = ms("1990-10-28T00:01:00-03:00")
    assert period_of(spec, jump - 1).key == "1990-10-28"
    assert period_of(spec, jump).key == "1990-10-28"  # the clock reads the 27th again
    assert period_of(spec, jump).start_ms == ms("1990-10-28T00:00:00-03:00")


@pytest.mark.parametrize(
    ("zone", "before", "after"),
    [
        ("Pacific/Kiritimati", "1994-12-30", "1995-01-01"),  # from UTC-10 to UTC+14: no 1994-12-31
        ("Pacific/Apia", "2011-12-29", "2011-12-31"),  # Samoa crossed the date line: no 2011-12-30
    ],
)
def test_a_day_the_zone_skipped_is_no_period(zone: str, before: str, after: str) -> None:
    spec = WindowSpec(Period.DAILY, time_zone=zone)
    first = parse_key(spec, before)
    second = next_period(spec, first)
    assert (second.key, second.start_ms) == (after, first.end_ms)
    assert period_of(spec, first.end_ms) == second and previous_period(spec, second) == first


@pytest.mark.parametrize(
    ("spec", "instant", "key"),
    [
        (WindowSpec(Period.WEEKLY), "2026-11-30T00:00:00+00:00", "2026-W49"),
        (WindowSpec(Period.WEEKLY), "2026-11-29T23:59:59+00:00", "2026-W48"),
        (WindowSpec(Period.WEEKLY), "2027-01-01T12:00:00+00:00", "2026-W53"),
        (WindowSpec(Period.WEEKLY), "2021-01-03T12:00:00+00:00", "2020-W53"),
        (WindowSpec(Period.WEEKLY, first_day_of_week=Weekday.SUNDAY), "2026-11-29T00:00:00+00:00", "2026-W48"),
        (WindowSpec(Period.WEEKLY, first_day_of_week=Weekday.SUNDAY), "2026-11-28T23:59:59+00:00", "2026-W47"),
        (WindowSpec(Period.WEEKLY, time_zone="America/New_York", first_day_of_week=Weekday.SUNDAY),
         "2026-11-29T04:59:59+00:00", "2026-W47"),
        (WindowSpec(Period.MONTHLY, time_zone="Pacific/Kiritimati"), "2026-11-30T10:00:00+00:00", "2026-12"),
        (WindowSpec(Period.MONTHLY, time_zone="America/St_Johns"), "2026-12-01T03:29:59+00:00", "2026-11"),
        (WindowSpec(Period.MONTHLY, time_zone="America/St_Johns"), "2026-12-01T03:30:00+00:00", "2026-12"),
    ],
)  # fmt: skip
def test_week_and_month_boundaries(spec: WindowSpec, instant: str, key: str) -> None:
    assert period_of(spec, ms(instant)).key == key


def test_keys_that_name_no_period_are_refused_with_the_expected_form() -> None:
    weekly, daily = WindowSpec(Period.WEEKLY), WindowSpec(Period.DAILY)
    assert key_error(weekly, "2025-W53") is not None  # 2025 has 52 ISO weeks
    assert key_error(weekly, "2026-W53") is None
    assert key_error(weekly, "2026-W00") is not None
    assert "YYYY-Www" in (key_error(weekly, "2026-49") or "")
    assert key_error(daily, "2026-02-30") is not None
    assert key_error(WindowSpec(Period.MONTHLY), "2026-13") is not None
    with pytest.raises(InvalidPeriodKey):
        parse_key(daily, "2026-11-30T00")


def test_windows_refuse_what_they_cannot_be_naming_the_field() -> None:
    cases = [
        (dict(period=Period.ROLLING), "window.days"),
        (dict(period=Period.ROLLING, days=400), "window.days"),
        (dict(period=Period.DAILY, days=3), "window.days"),
        (dict(period=Period.DAILY, time_zone="Mars/Olympus"), "window.timeZone"),
        (dict(period=Period.DAILY, time_zone="../../etc/passwd"), "window.timeZone"),
        (dict(period=Period.MONTHLY, first_day_of_week=Weekday.SUNDAY), "window.firstDayOfWeek"),
    ]
    for fields, field in cases:
        with pytest.raises(InvalidWindow) as refused:
            WindowSpec(**fields)  # type: ignore[arg-type]
        assert refused.value.field == field


def test_the_catalog_string_round_trips_and_old_strings_still_read() -> None:
    for spec in [WindowSpec(Period.ROLLING, 7, "Asia/Tokyo"), WindowSpec(Period.DAILY),
                 WindowSpec(Period.WEEKLY, time_zone="America/New_York", first_day_of_week=Weekday.SUNDAY)]:  # fmt: skip
        assert decode_window(encode_window(spec)) == spec
    assert decode_window("weekly") == WindowSpec(Period.WEEKLY)
    assert decode_window("rolling:7d") == WindowSpec(Period.ROLLING, 7)
    assert decode_window(None) is None
    with pytest.raises(InvalidWindow):
        decode_window("fortnightly")
    with pytest.raises(InvalidWindow):
        decode_window("daily;tz=Nowhere/City")
