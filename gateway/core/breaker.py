"""A circuit breaker as pure state: callers pass the time and report outcomes."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(slots=True)
class CircuitBreaker:
    """Opens after ``threshold`` failures in a row; after ``reset_s`` lets one trial call through.

    A trial that succeeds closes the breaker; one that fails opens it for another ``reset_s``.
    """

    threshold: int
    reset_s: float
    failures: int = 0
    opened_at: float | None = None
    trial_running: bool = False

    def state(self, now: float) -> BreakerState:
        if self.opened_at is None:
            return BreakerState.CLOSED
        if now - self.opened_at >= self.reset_s:
            return BreakerState.HALF_OPEN
        return BreakerState.OPEN

    def allow(self, now: float) -> bool:
        """Whether a call may go to the backend now (marks the half-open trial as taken)."""
        state = self.state(now)
        if state is BreakerState.CLOSED:
            return True
        if state is BreakerState.HALF_OPEN and not self.trial_running:
            self.trial_running = True
            return True
        return False

    def succeeded(self) -> None:
        self.failures, self.opened_at, self.trial_running = 0, None, False

    def failed(self, now: float) -> None:
        self.failures += 1
        self.trial_running = False
        if self.opened_at is not None or self.failures >= self.threshold:
            self.opened_at = now
