"""Freshness: how long an acknowledged award takes to be visible in the projection.

``PositionHistory`` polls the projection's asOf positions every 5 ms during a load and keeps every
change with the time it was first seen; afterwards ``freshness`` finds, for each accepted request
of the load's ``Results``, when the positions first reached its offset. Used by
``ops/bench/pipeline`` and ``ops/bench/windows``.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Mapping

from ops.bench.kit import distribution
from ops.bench.load import Pending, Results
from regions.stores.redis.projection import RedisProjection


class PositionHistory:
    """Every change of the projection's asOf positions, with the time it was first seen (polled
    every 5 ms), so each acknowledged award's visibility is found afterwards."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, int], tuple[list[float], list[int]]] = {}
        self._needed: dict[tuple[str, int], int] | None = None

    async def watch(self, projection: RedisProjection, stop: asyncio.Event, pending: list[Pending]) -> None:
        """Until ``stop`` is set and the positions reach every award in ``pending`` (read then)."""
        last: Mapping[tuple[str, int], int] = {}
        while not (stop.is_set() and self._reach_all(pending, last)):
            positions = (await projection.positions()).offsets
            now = time.perf_counter()
            for source, offset in positions.items():
                if last.get(source) != offset:
                    times, offsets = self.seen.setdefault(source, ([], []))
                    times.append(now)
                    offsets.append(offset)
            last = positions
            await asyncio.sleep(0.005)

    def _reach_all(self, pending: list[Pending], positions: Mapping[tuple[str, int], int]) -> bool:
        if self._needed is None:  # the load is over: what each source must reach
            self._needed = {}
            for _, source, offset in pending:
                self._needed[source] = max(offset, self._needed.get(source, -1))
        return all(positions.get(source, -1) >= offset for source, offset in self._needed.items())

    def visible_at(self, acked: float, source: tuple[str, int], offset: int) -> float | None:
        """When positions first reached ``offset`` of ``source`` at or after ``acked``."""
        times, offsets = self.seen.get(source, ([], []))
        before = bisect.bisect_right(times, acked) - 1  # the positions in force when it was acknowledged
        if before >= 0 and offsets[before] >= offset:
            return acked
        i = max(bisect.bisect_left(times, acked), bisect.bisect_left(offsets, offset))
        return times[i] if i < len(times) else None


def freshness(history: PositionHistory, results: Results) -> None:
    """Acknowledged -> visible for every accepted request; those never seen stay in ``pending``."""
    waiting = []
    for acked, source, offset in results.pending:
        seen = history.visible_at(acked, source, offset)
        if seen is None:
            waiting.append((acked, source, offset))
        else:
            results.fresh_ms.append((seen - acked) * 1000)
    results.pending = waiting


def freshness_figures(results: Results) -> dict[str, object]:
    """After ``freshness``: its ``distribution`` (ms) and the accepted requests never seen visible."""
    return {"freshness_ms": distribution(results.fresh_ms), "never_visible": len(results.pending)}
