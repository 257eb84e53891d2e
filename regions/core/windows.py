"""A board's time window as the catalog stores it: ``daily``, ``weekly``, ``monthly``, ``rolling:<N>d``."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

MAX_ROLLING_DAYS = 366


class Period(StrEnum):
    DAILY = "DAILY"
    WEEKLY = "WEEKLY"
    MONTHLY = "MONTHLY"
    ROLLING = "ROLLING"


@dataclass(frozen=True, slots=True)
class WindowSpec:
    period: Period
    days: int | None = None


def encode_window(spec: WindowSpec) -> str:
    """The catalog string of a window that passed :func:`window_error`."""
    if spec.period is Period.ROLLING:
        return f"rolling:{spec.days}d"
    return spec.period.value.lower()


def window_error(spec: WindowSpec) -> str | None:
    """Why a window is invalid, or None."""
    if spec.period is Period.ROLLING:
        if spec.days is None or not 1 <= spec.days <= MAX_ROLLING_DAYS:
            return f"window.days: a ROLLING window needs 1..{MAX_ROLLING_DAYS} days"
        return None
    if spec.days is not None:
        return f"window.days: only a ROLLING window takes days, not {spec.period.value}"
    return None


def decode_window(stored: str | None) -> WindowSpec | None:
    """The window of a catalog string; None for an all-time board or an unknown form."""
    if not stored:
        return None
    if stored.startswith("rolling:") and stored.endswith("d"):
        days = stored[len("rolling:") : -1]
        return WindowSpec(Period.ROLLING, int(days)) if days.isdigit() else None
    try:
        return WindowSpec(Period(stored.upper()))
    except ValueError:
        return None
