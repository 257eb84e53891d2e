"""Admission control: whether work of a given cost may start, given what is in flight. Pure.

Invariants:

- **Never over the bound.** Work is admitted only when what is in flight plus its cost stays within
  the bound, except that work arriving when nothing is in flight always is (a batch larger than the
  bound would otherwise never be admitted: the bound limits concurrency, not the size of one request).
- **Reserved share.** The top ``reserved`` units of the bound are only for priority work (the
  gateway's durable writes): ordinary work is refused once it would eat into them, so priority work
  is admitted while ordinary work is shed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class Bound:
    """At most ``limit`` units in flight; the last ``reserved`` of them only for priority work."""

    limit: int
    reserved: int = 0

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError(f"limit must be at least 1, got {self.limit}")
        if not 0 <= self.reserved < self.limit:
            raise ValueError(f"reserved must be in 0..{self.limit - 1} (below limit), got {self.reserved}")

    def admits(self, in_flight: int, cost: int = 1, priority: bool = False) -> bool:
        """Whether work of ``cost`` units may start while ``in_flight`` units are."""
        if in_flight <= 0:
            return True
        ceiling = self.limit if priority else self.limit - self.reserved
        return in_flight + cost <= ceiling

    def full(self, in_flight: int, priority: bool = False) -> bool:
        """Nothing more may start, not even one unit: refused before anything is read."""
        return not self.admits(in_flight, 1, priority)


@dataclass(slots=True)
class AckTarget:
    """A bound of awards in flight that follows how long Kafka takes to acknowledge them.

    A fixed bound lets a saturated machine run at whatever latency the bound allows (Little's law:
    awards in flight = rate x latency); on a machine that every process shares, the awards accepted
    past the knee take the CPU that the brokers, processors and the load itself need, and every
    latency grows. This bound keeps acknowledgements near ``target_s`` instead, as adaptive
    concurrency limits do: over windows of at least ``window_s`` and ``MIN_SAMPLES`` acknowledgements,

    - a window whose p90 is over the target lowers the bound in proportion (by half at most);
    - a window under the target in which the awards in flight reached ``BUSY`` of the bound raises it
      by a tenth (+1), up to ``ceiling``;
    - otherwise the bound stays. It never goes under ``floor`` (nor over ``ceiling``).

    So an overloaded process refuses the excess at once (a refusal costs a fraction of an
    acceptance) and keeps its accepted awards' latency, and the bound climbs back as soon as
    acknowledgements are fast again. Pure: the caller passes each latency and the time."""

    ceiling: int
    target_s: float
    floor: int = 20
    window_s: float = 0.25
    limit: int = field(init=False)
    _samples: list[float] = field(init=False, default_factory=list)
    _peak: int = field(init=False, default=0)
    _window_started: float | None = field(init=False, default=None)

    MIN_SAMPLES: ClassVar[int] = 10
    BUSY: ClassVar[float] = 0.9

    def __post_init__(self) -> None:
        if self.ceiling < 1:
            raise ValueError(f"ceiling must be at least 1, got {self.ceiling}")
        if self.target_s <= 0:
            raise ValueError(f"target_s must be positive, got {self.target_s}")
        self.floor = max(1, min(self.floor, self.ceiling))
        self.limit = self.ceiling

    def in_flight(self, awards: int) -> None:
        """What is in flight now (after an award was admitted)."""
        self._peak = max(self._peak, awards)

    def acknowledged(self, seconds: float, now: float) -> int | None:
        """An admitted request's awards were acknowledged after ``seconds``; the new bound when this
        closes a window that changes it, else None."""
        samples = self._samples
        if self._window_started is None:
            self._window_started = now
        samples.append(seconds)
        if len(samples) < self.MIN_SAMPLES or now - self._window_started < self.window_s:
            return None
        samples.sort()
        p90 = samples[int(0.9 * (len(samples) - 1))]
        busy = self._peak >= self.BUSY * self.limit
        samples.clear()
        self._peak, self._window_started = 0, now
        if p90 > self.target_s:
            limit = max(self.floor, int(self.limit * max(0.5, self.target_s / p90)))
        elif busy:
            limit = min(self.ceiling, int(self.limit * 1.1) + 1)
        else:
            return None
        if limit == self.limit:
            return None
        self.limit = limit
        return limit
