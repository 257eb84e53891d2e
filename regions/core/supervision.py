"""When a supervised process that exited is started again, and when to stop trying. Pure.

The rule: a process that exits unasked is restarted after 1 s, then 2, 4, 8 ... (at most
``max_delay_s``), counting its exits within the last ``window_s``; the ``max_crashes``-th exit within
that window is a crash loop, and supervision ends (restarting would not help: a port in use, a
server down, a setting refused).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CrashPolicy:
    max_crashes: int = 5
    window_s: float = 60.0
    first_delay_s: float = 1.0
    max_delay_s: float = 30.0

    def describe(self) -> str:
        return f"{self.max_crashes} exits within {self.window_s:.0f} s"


@dataclass(frozen=True, slots=True)
class Restart:
    delay_s: float
    crashes: int  # exits within the window, this one included


@dataclass(frozen=True, slots=True)
class GiveUp:
    crashes: int


def after_crash(
    policy: CrashPolicy, earlier: tuple[float, ...], now_s: float
) -> tuple[tuple[float, ...], Restart | GiveUp]:
    """The exit times to remember (those within the window, this one included) and what to do."""
    recent = (*(t for t in earlier if now_s - t < policy.window_s), now_s)
    if len(recent) >= policy.max_crashes:
        return recent, GiveUp(len(recent))
    delay = min(policy.first_delay_s * 2 ** (len(recent) - 1), policy.max_delay_s)
    return recent, Restart(delay, len(recent))
