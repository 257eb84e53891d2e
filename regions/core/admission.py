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

from dataclasses import dataclass


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
