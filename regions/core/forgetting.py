"""When the dedupe memory may forget a remembered copy: by stream time, never the wall clock.

Pure: positions in, a time out. A copy of an event id can come from any source a task reads (its own
region's awards, or any other region's replicated ones), and within one source acceptance times
grow with the offset (up to the clock differences of that region's intakes, which the margin
covers). So a copy accepted at ``t`` may be forgotten once every source has passed ``t`` by the
horizon and the margin: no copy within the horizon of it can still arrive. A source that lags (a
replication hold, a processor outage, a backlog) holds the memory back instead of losing awards,
and the outcome of an award never depends on when it is read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from regions.core.positions import SourcePosition


def stream_time(position: SourcePosition) -> int:
    """How far a source's stream has come in acceptance time: its newest award or heartbeat."""
    return max(position.accepted_at_ms, position.heartbeat_at_ms)


def forget_before(
    positions: Mapping[str, SourcePosition], regions: Iterable[str], keep_ms: int
) -> int | None:
    """The acceptance time before which copies may be forgotten, given each accepting region's
    position in the task and ``keep_ms`` (the horizon plus the margin); None while any region has
    not been read yet (its copies could be of any age)."""
    times = []
    for region in regions:
        position = positions.get(region)
        if position is None or stream_time(position) <= 0:
            return None
        times.append(stream_time(position))
    return min(times) - keep_ms if times else None


def should_forget(before_ms: int | None, complete_since_ms: int | None, step_ms: int) -> bool:
    """Whether forgetting is due: nothing was forgotten yet, or the bound moved forward by at least
    ``step_ms`` since the last time (so a task does not forget a handful of copies every round)."""
    if before_ms is None:
        return False
    return complete_since_ms is None or before_ms - complete_since_ms >= step_ms
