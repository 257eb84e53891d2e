"""The cadence of a loop that commits a transaction per round (the processor, the replicator).

A round that found work is followed by the next one no sooner than ``interval_s`` after it began;
a round that found nothing is followed at once (its poll already waited). While awards flow, a
round therefore takes everything fetched during the interval: the transactions a second stay
bounded by the interval however high the rate, each carrying more records as the rate rises, so the
cost of a transaction (its requests to the coordinator, its markers on every partition it wrote) is
shared by more awards.

The interval grows with load: a round that took long (its transactions wait on brokers that every
process shares) is followed no sooner than ``STRETCH`` times its own length after it began, up to
``longest_s``. So the busier the brokers, the fewer transactions each loop asks of them, each
carrying more records, instead of the brokers' cost per award rising as they saturate. What it adds
to freshness is at most ``longest_s`` (``interval_s`` while rounds are quick).
"""

from __future__ import annotations

import asyncio
from typing import ClassVar


class Cadence:
    STRETCH: ClassVar[float] = 4.0
    """A busy loop spends at most a quarter of its time in rounds (until ``longest_s`` is reached)."""

    def __init__(self, interval_s: float, longest_s: float | None = None) -> None:
        self.interval_s = interval_s
        self.longest_s = interval_s if longest_s is None else max(interval_s, longest_s)
        self._started = 0.0

    def begin(self) -> None:
        """A round begins now."""
        self._started = asyncio.get_running_loop().time()

    def next_start(self, now: float) -> float:
        """When the round begun at ``begin`` and ended ``now`` may be followed, if it found work."""
        took = now - self._started
        return self._started + min(self.longest_s, max(self.interval_s, self.STRETCH * took))

    async def end(self, worked: bool) -> None:
        """The round ended; when it found work, wait out the rest of its interval."""
        if worked and self.longest_s > 0:
            now = asyncio.get_running_loop().time()
            await asyncio.sleep(max(0.0, self.next_start(now) - now))
