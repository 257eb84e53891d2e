"""How fresh a projection is for each accepting region: the ``regions`` of an asOf. Pure; the reader
passes the time.

A projection hears from a region through the records of that region it reflects: awards (their
acceptance time) and the heartbeats the region writes to every awards partition. A region's
projection is only as fresh as its least advanced partition, so:

- ``lag_s`` is the time since the *oldest* of its partitions' newest heard-of records; None when a
  partition was never heard of (nothing can be said about that part of the region). The partitions
  are ``partitions`` and any higher one the positions name: a reader configured with fewer partitions
  than the topic has still waits for every partition it has heard of, rather than call a region fresh
  from part of it;
- ``stale`` when ``lag_s`` is None or above the threshold: a cut-off, silent or far-behind region;
- ``newest_accepted_ms`` is the newest acceptance time of its awards reflected (any partition);
- ``gap`` when the replicator reported records of the region deleted before they were copied: the
  positions then claim awards the projection never received.

Times are the accepting region's clock; the lag also holds the clocks' difference, which NTP keeps
far below the threshold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from regions.core.positions import SourceKey, SourcePosition


@dataclass(frozen=True, slots=True)
class RegionStatus:
    region: str
    newest_accepted_ms: int | None
    lag_s: float | None
    stale: bool
    gap: bool


def region_status(
    region: str,
    marks: Mapping[SourceKey, SourcePosition],
    partitions: int,
    now_ms: int,
    stale_after_s: float,
) -> RegionStatus:
    """The freshness of ``region`` in a projection whose positions are ``marks``."""
    count = max(partitions, 1 + max((p for r, p in marks if r == region), default=-1))
    own = [marks.get((region, p)) for p in range(count)]
    heard = [max(m.accepted_at_ms, m.heartbeat_at_ms) for m in own if m is not None]
    oldest = min(heard) if len(heard) == count and min(heard, default=0) > 0 else None
    lag_s = None if oldest is None else max(0, now_ms - oldest) / 1000
    accepted = max((m.accepted_at_ms for m in own if m is not None), default=0)
    return RegionStatus(
        region=region,
        newest_accepted_ms=accepted or None,
        lag_s=lag_s,
        stale=lag_s is None or lag_s > stale_after_s,
        gap=any(m is not None and m.gaps > 0 for m in own),
    )


def region_statuses(
    regions: Iterable[str],
    marks: Mapping[SourceKey, SourcePosition],
    partitions: int,
    now_ms: int,
    stale_after_s: float,
) -> tuple[RegionStatus, ...]:
    """One status per region of the deployment and per region the positions name, by name."""
    names = sorted(set(regions) | {region for region, _ in marks})
    return tuple(region_status(r, marks, partitions, now_ms, stale_after_s) for r in names)


@dataclass(frozen=True, slots=True)
class FreshnessRule:
    """How a reader judges a projection's freshness: the deployment's regions, the partitions of
    every region's awards topic (equal in every region), and the stale threshold."""

    regions: tuple[str, ...]
    partitions: int
    stale_after_s: float = field(default=5.0)

    def statuses(self, marks: Mapping[SourceKey, SourcePosition], now_ms: int) -> tuple[RegionStatus, ...]:
        return region_statuses(self.regions, marks, self.partitions, now_ms, self.stale_after_s)
