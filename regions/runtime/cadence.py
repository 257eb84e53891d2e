"""The cadence of a loop that commits a transaction per round (the processor, the replicator).

A round that found work is followed by the next one no sooner than ``interval_s`` after it began;
a round that found nothing is followed at once (its poll already waited). While awards flow, a
round therefore takes everything fetched during the interval: the transactions a second stay
bounded by the interval however high the rate, each carrying more records as the rate rises, so the
cost of a transaction (its requests to the coordinator, its markers on every partition it wrote) is
shared by more awards. What it adds to freshness is at most the interval.
"""

from __future__ import annotations

import asyncio


class Cadence:
    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._started = 0.0

    def begin(self) -> None:
        """A round begins now."""
        self._started = asyncio.get_running_loop().time()

    async def end(self, worked: bool) -> None:
        """The round ended; when it found work, wait out the rest of its interval."""
        if worked and self.interval_s > 0:
            await asyncio.sleep(max(0.0, self._started + self.interval_s - asyncio.get_running_loop().time()))
