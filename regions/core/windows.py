"""A board's time window as the catalog stores it (and the intake stamps it into every award).

The form is ``daily``, ``weekly``, ``monthly`` or ``rolling:<N>d``, then ``;tz=<IANA zone>`` unless
the zone is UTC and ``;first=<DAY>`` for a weekly window whose weeks do not start on Monday:
``weekly;tz=America/New_York;first=SUNDAY``. Strings stored before zones and first days existed
(``weekly``, ``rolling:7d``) read as UTC, weeks from Monday.
"""

from __future__ import annotations

from functools import lru_cache

from regions.core.periods import (
    DEFAULT_TIME_ZONE,
    MAX_ROLLING_DAYS,
    InvalidWindow,
    Period,
    Weekday,
    WindowSpec,
)

__all__ = ["MAX_ROLLING_DAYS", "Period", "WindowSpec", "decode_window", "describe_window", "encode_window"]


def encode_window(spec: WindowSpec) -> str:
    """The catalog string of a window."""
    text = f"rolling:{spec.days}d" if spec.rolling else spec.period.value.lower()
    if spec.time_zone != DEFAULT_TIME_ZONE:
        text += f";tz={spec.time_zone}"
    if spec.first_day_of_week not in (None, Weekday.MONDAY):
        text += f";first={spec.first_day_of_week}"
    return text


@lru_cache(maxsize=4096)
def decode_window(stored: str | None) -> WindowSpec | None:
    """The window of a catalog string; None for an all-time board. ``InvalidWindow`` for a form
    this version does not know."""
    if not stored:
        return None
    base, *options = stored.split(";")
    named = dict(option.partition("=")[::2] for option in options)
    if set(named) - {"tz", "first"}:
        raise InvalidWindow("window", f"{stored!r} has options this version does not know")
    days: int | None = None
    if base.startswith("rolling:") and base.endswith("d") and base[len("rolling:") : -1].isdigit():
        period, days = Period.ROLLING, int(base[len("rolling:") : -1])
    elif base.upper() in (Period.DAILY, Period.WEEKLY, Period.MONTHLY):
        period = Period(base.upper())
    else:
        raise InvalidWindow("window", f"{stored!r} is not a window this version knows")
    try:
        first = Weekday(named["first"]) if "first" in named else None
    except ValueError as exc:
        raise InvalidWindow("window.firstDayOfWeek", f"{named['first']!r} is not a day") from exc
    return WindowSpec(period, days, named.get("tz", DEFAULT_TIME_ZONE), first)


def describe_window(spec: WindowSpec | None) -> str:
    """How an operator reads a window, in one word: ``WEEKLY:SUNDAY@America/New_York``,
    ``ROLLING:7d@UTC``, ``DAILY@Asia/Kolkata``; ``none`` for an all-time board."""
    if spec is None:
        return "none"
    if spec.rolling:
        return f"ROLLING:{spec.days}d@{spec.time_zone}"
    first = f":{spec.week_start}" if spec.period is Period.WEEKLY else ""
    return f"{spec.period}{first}@{spec.time_zone}"
