"""Rate-limited logging decisions: a repeated message is logged at most once per interval per key,
with the number of repeats left out since. Pure state; the caller passes the time."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class LogLimiter:
    interval_s: float
    _last: dict[str, float] = field(default_factory=dict)
    _quiet: dict[str, int] = field(default_factory=dict)

    def allow(self, key: str, now: float) -> int | None:
        """None to stay quiet; else log now, and the result is how many were left out before."""
        last = self._last.get(key)
        if last is not None and now - last < self.interval_s:
            self._quiet[key] = self._quiet.get(key, 0) + 1
            return None
        self._last[key] = now
        return self._quiet.pop(key, 0)
