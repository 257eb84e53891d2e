"""Time windows of a board: calendar periods (daily, weekly, monthly) and rolling N-day windows.

Pure: no I/O, no clock (every instant is an argument, in ms since the epoch). Periods follow the
wall clock of the board's IANA time zone, so a DST day lasts 23 or 25 hours.

Rules kept here (and property-tested against a reference model):
- a period is the half-open interval ``[start, end)``; ``end`` is the next period's ``start``, so the
  periods of a board tile time with neither gap nor overlap;
- a period starts at the first instant at which the zone's local date reaches its first day: local
  midnight, or when midnight is skipped by a DST jump, the instant of that jump. Time never goes
  back: when a DST change turns the clock back across midnight, the instants that show the previous
  date again stay in the later period (the period is the one whose interval holds the instant);
- keys are readable and sort like the periods they name: ``2026-11-30`` (DAILY), ``2026-11``
  (MONTHLY) and ``2026-W49`` (WEEKLY). A week is named by its fourth day: the year that day falls
  in, and ``1 + (that day's day of the year - 1) // 7``. So a week belongs to the year that holds
  at least four of its days, and with weeks starting on Monday this is exactly the ISO 8601 week;
  with another first day of week the same rule applies to those weeks;
- a ROLLING board of N days ranks the last N local days: day ``d`` (its ordinal, see ``day_of``)
  leaves the window when day ``d + N`` begins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

MAX_ROLLING_DAYS = 366
DEFAULT_TIME_ZONE = "UTC"
_KEYS = {
    "DAILY": re.compile(r"^(\d{4})-(\d{2})-(\d{2})$"),
    "WEEKLY": re.compile(r"^(\d{4})-W(\d{2})$"),
    "MONTHLY": re.compile(r"^(\d{4})-(\d{2})$"),
}
_KEY_FORMS = {"DAILY": "YYYY-MM-DD", "WEEKLY": "YYYY-Www", "MONTHLY": "YYYY-MM"}


class Period(StrEnum):
    DAILY = "DAILY"
    WEEKLY = "WEEKLY"
    MONTHLY = "MONTHLY"
    ROLLING = "ROLLING"


class Weekday(StrEnum):
    """Days of the week in ISO order (``date.weekday()`` is the index)."""

    MONDAY = "MONDAY"
    TUESDAY = "TUESDAY"
    WEDNESDAY = "WEDNESDAY"
    THURSDAY = "THURSDAY"
    FRIDAY = "FRIDAY"
    SATURDAY = "SATURDAY"
    SUNDAY = "SUNDAY"

    @property
    def number(self) -> int:
        return list(Weekday).index(self)


class InvalidWindow(ValueError):
    """A window breaks a rule; ``field`` names the input field at fault (``window.timeZone``, ...)."""

    def __init__(self, field: str, rule: str) -> None:
        super().__init__(f"{field}: {rule}")
        self.field, self.rule = field, rule


class InvalidPeriodKey(ValueError):
    """A period key that names no period of the window; the message says the expected form."""


@dataclass(frozen=True, slots=True)
class WindowSpec:
    """A board's time window. ``days`` only for ROLLING, ``first_day_of_week`` only for WEEKLY
    (None: Monday)."""

    period: Period
    days: int | None = None
    time_zone: str = DEFAULT_TIME_ZONE
    first_day_of_week: Weekday | None = None

    def __post_init__(self) -> None:
        problem = window_problem(self)
        if problem is not None:
            raise InvalidWindow(*problem)

    @property
    def rolling(self) -> bool:
        return self.period is Period.ROLLING

    @property
    def week_start(self) -> Weekday:
        return self.first_day_of_week or Weekday.MONDAY


@dataclass(frozen=True, slots=True)
class PeriodSpan:
    """One period: its key and its interval ``[start_ms, end_ms)``."""

    key: str
    start_ms: int
    end_ms: int

    def holds(self, instant_ms: int) -> bool:
        return self.start_ms <= instant_ms < self.end_ms


def window_problem(spec: WindowSpec) -> tuple[str, str] | None:
    """(field, rule) of the first rule the window breaks, or None."""
    if spec.period is Period.ROLLING:
        if spec.days is None or not 1 <= spec.days <= MAX_ROLLING_DAYS:
            return "window.days", f"a ROLLING window needs 1..{MAX_ROLLING_DAYS} days"
    elif spec.days is not None:
        return "window.days", f"only a ROLLING window takes days, not {spec.period.value}"
    if spec.first_day_of_week is not None and spec.period is not Period.WEEKLY:
        return "window.firstDayOfWeek", f"only a WEEKLY window takes a first day, not {spec.period.value}"
    if zone_of(spec.time_zone) is None:
        return "window.timeZone", f"{spec.time_zone!r} is not an IANA time zone name such as Europe/Stockholm"
    return None


@lru_cache(maxsize=1024)
def zone_of(name: str) -> ZoneInfo | None:
    """The IANA zone of that name, or None when there is none (never a file path)."""
    if not 0 < len(name) <= 64 or name.startswith("/") or ".." in name or not name.isprintable():
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def _zone(spec: WindowSpec) -> ZoneInfo:
    zone = zone_of(spec.time_zone)
    if zone is None:  # a WindowSpec cannot be built with one; kept for the type checker
        raise InvalidWindow("window.timeZone", f"{spec.time_zone!r} is not an IANA time zone")
    return zone


def _local_date(zone: ZoneInfo, instant_ms: int) -> date:
    return datetime.fromtimestamp(instant_ms // 1000, zone).date()


def _wall(zone: ZoneInfo, seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, zone).replace(tzinfo=None)


def day_start_ms(zone: ZoneInfo, day: date) -> int:
    """The first instant at which the local date reaches ``day``: local midnight, or the DST jump
    that skips it."""
    midnight = datetime.combine(day, time())
    found = [int(midnight.replace(tzinfo=zone, fold=fold).timestamp()) for fold in (0, 1)]
    exact = [s for s in found if _wall(zone, s) == midnight]
    if exact:
        return min(exact) * 1000  # an ambiguous midnight: its first occurrence
    low, high = min(found), max(found)  # the wall clock is before midnight at low, past it at high
    while high - low > 1:
        middle = (low + high) // 2
        if _wall(zone, middle) >= midnight:
            high = middle
        else:
            low = middle
    return high * 1000


def _first_day(spec: WindowSpec, day: date) -> date:
    """The first local day of the calendar period holding ``day``."""
    if spec.period is Period.MONTHLY:
        return day.replace(day=1)
    if spec.period is Period.WEEKLY:
        return day - timedelta(days=(day.weekday() - spec.week_start.number) % 7)
    return day


def _next_first_day(spec: WindowSpec, first: date) -> date:
    if spec.period is Period.MONTHLY:
        return date(first.year + first.month // 12, first.month % 12 + 1, 1)
    return first + timedelta(days=7 if spec.period is Period.WEEKLY else 1)


def _key(spec: WindowSpec, first: date) -> str:
    if spec.period is Period.MONTHLY:
        return f"{first.year:04d}-{first.month:02d}"
    if spec.period is Period.WEEKLY:
        fourth = first + timedelta(days=3)
        return f"{fourth.year:04d}-W{(fourth.timetuple().tm_yday - 1) // 7 + 1:02d}"
    return first.isoformat()


def _span(spec: WindowSpec, first: date) -> PeriodSpan:
    zone = _zone(spec)
    return PeriodSpan(
        _key(spec, first), day_start_ms(zone, first), day_start_ms(zone, _next_first_day(spec, first))
    )


def _calendar(spec: WindowSpec) -> None:
    if spec.rolling:
        raise InvalidWindow("window.period", "a ROLLING window has days, not periods")


def period_of(spec: WindowSpec, instant_ms: int) -> PeriodSpan:
    """The period of a calendar window that holds ``instant_ms``."""
    _calendar(spec)
    span = _span(spec, _first_day(spec, _local_date(_zone(spec), instant_ms)))
    while instant_ms >= span.end_ms:  # the clock went back across a boundary: time did not
        span = next_period(spec, span)
    return span


def next_period(spec: WindowSpec, span: PeriodSpan) -> PeriodSpan:
    """The period that holds the instant ``span`` ends. Not simply the next calendar day: a zone
    may skip a whole local day (Pacific/Kiritimati skipped 1994-12-31), which no instant belongs to."""
    _calendar(spec)
    return period_of(spec, span.end_ms)


def previous_period(spec: WindowSpec, span: PeriodSpan) -> PeriodSpan:
    """The period that holds the instant before ``span`` starts (see :func:`next_period`)."""
    _calendar(spec)
    return period_of(spec, span.start_ms - 1)


def _fourth_day_of_week_one(spec: WindowSpec, year: int) -> date:
    """The fourth day of week 1 of ``year``: the first day of the year that is the fourth day of a
    week (its day of the year is 1..7)."""
    january_first = date(year, 1, 1)
    return january_first + timedelta(days=(spec.week_start.number + 3 - january_first.weekday()) % 7)


def _first_day_of_key(spec: WindowSpec, key: str) -> date:
    match = _KEYS[spec.period.value].match(key)
    if match is None:
        raise InvalidPeriodKey(
            f"{key!r} is not a {spec.period.value} period key ({_KEY_FORMS[spec.period.value]})"
        )
    numbers = [int(g) for g in match.groups()]
    try:
        if spec.period is Period.DAILY:
            return date(*numbers)
        if spec.period is Period.MONTHLY:
            return date(numbers[0], numbers[1], 1)
        year, week = numbers
        first = _fourth_day_of_week_one(spec, year) + timedelta(days=7 * (week - 1) - 3)
        if week < 1 or _key(spec, first) != key:
            raise InvalidPeriodKey(
                f"{key!r}: {year} has no week {week} (weeks starting on {spec.week_start})"
            )
        return first
    except (ValueError, OverflowError) as exc:
        if isinstance(exc, InvalidPeriodKey):
            raise
        raise InvalidPeriodKey(f"{key!r} names no {spec.period.value} period: {exc}") from exc


def parse_key(spec: WindowSpec, key: str) -> PeriodSpan:
    """The period named ``key`` (``InvalidPeriodKey`` when it names none)."""
    _calendar(spec)
    return _span(spec, _first_day_of_key(spec, key))


def key_error(spec: WindowSpec, key: str) -> str | None:
    """Why ``key`` names no period of the window, or None."""
    try:
        parse_key(spec, key)
    except (InvalidPeriodKey, InvalidWindow) as exc:
        return str(exc)
    return None


def day_of(spec: WindowSpec, instant_ms: int) -> int:
    """The local day that holds ``instant_ms`` as its proleptic Gregorian ordinal (days of a
    ROLLING window; the same day boundaries as a DAILY window in the zone)."""
    daily = WindowSpec(Period.DAILY, time_zone=spec.time_zone)
    return date.fromisoformat(period_of(daily, instant_ms).key).toordinal()


def day_key(ordinal: int) -> str:
    """A day's readable name, ``2026-11-30``."""
    return date.fromordinal(ordinal).isoformat()


def day_start_of(spec: WindowSpec, ordinal: int) -> int:
    """When the local day ``ordinal`` begins, in ms."""
    return day_start_ms(_zone(spec), date.fromordinal(ordinal))


def expired_through(spec: WindowSpec, instant_ms: int) -> int:
    """The newest day that has left a ROLLING window at ``instant_ms``: the window holds the days
    after it (the last ``days`` local days, today included)."""
    if not spec.rolling or spec.days is None:
        raise InvalidWindow("window.period", "only a ROLLING window has days that expire")
    return day_of(spec, instant_ms) - spec.days


def utc_ms(at: datetime) -> int:
    """An aware datetime as ms since the epoch."""
    return int(at.astimezone(UTC).timestamp() * 1000)


def closed_rule(spec: WindowSpec, event_ms: int, now_ms: int, grace_ms: int) -> str | None:
    """Why an award with this event time can no longer count at ``now_ms`` (None: it can): its
    period ended more than the grace ago (the home region closes it then), or its day has left the
    rolling window."""
    if spec.rolling:
        gone = expired_through(spec, now_ms)
        if day_of(spec, event_ms) <= gone:
            return f"must fall within the rolling window of the last {spec.days} days (after {day_key(gone)})"
        return None
    span = period_of(spec, event_ms)
    if span.end_ms + grace_ms <= now_ms:
        ended = datetime.fromtimestamp(span.end_ms / 1000, UTC).isoformat().replace("+00:00", "Z")
        return f"must fall in an open period: period {span.key} ended at {ended} and its {grace_ms // 1000} s of grace have passed"
    return None
