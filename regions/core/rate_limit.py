"""Token buckets per caller (pure; the time is a parameter)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class TokenBuckets:
    """``rate`` tokens per second up to ``burst``, one bucket per key."""

    rate: float
    burst: float
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)

    def take(self, key: str, cost: float, now_s: float) -> float:
        """Take ``cost`` tokens; returns 0 when allowed, else the seconds until it would be."""
        tokens, stamp = self._buckets.get(key, (self.burst, now_s))
        tokens = min(self.burst, tokens + (now_s - stamp) * self.rate)
        if tokens >= cost:
            self._buckets[key] = (tokens - cost, now_s)
            return 0.0
        self._buckets[key] = (tokens, now_s)
        return (cost - tokens) / self.rate

    def reserve(self, key: str, cost: float, now_s: float) -> float:
        """Take ``cost`` tokens even if that leaves a debt; returns the seconds to wait before
        spending them. Callers that always wait this long proceed at ``rate`` on average."""
        tokens, stamp = self._buckets.get(key, (self.burst, now_s))
        tokens = min(self.burst, tokens + (now_s - stamp) * self.rate) - cost
        self._buckets[key] = (tokens, now_s)
        return max(0.0, -tokens / self.rate)
