"""How far each accepting region's awards in one partition are read (asOf positions).

Pure: the position of a (region, partition) only moves forward, by the records a processor task
reads from any source topic, whatever their order across sources; positions met twice (a replay,
two watermarks of one batch) merge to the furthest of each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class SourcePosition:
    """``offset``: the newest offset of the accepting region's awards partition the task has read
    (-1: none); the newest acceptance and heartbeat times seen; replication gaps reported there."""

    offset: int = -1
    accepted_at_ms: int = 0
    heartbeat_at_ms: int = 0
    gaps: int = 0

    def after_award(self, offset: int, accepted_at_ms: int) -> SourcePosition:
        return replace(
            self, offset=max(self.offset, offset), accepted_at_ms=max(self.accepted_at_ms, accepted_at_ms)
        )

    def after_heartbeat(self, offset: int, at_ms: int) -> SourcePosition:
        return replace(
            self, offset=max(self.offset, offset), heartbeat_at_ms=max(self.heartbeat_at_ms, at_ms)
        )

    def after_other(self, offset: int) -> SourcePosition:
        """A record that is neither an award nor a heartbeat (reconciled, or an unknown control)."""
        return replace(self, offset=max(self.offset, offset))

    def after_gap(self, offset: int) -> SourcePosition:
        """Records up to ``offset`` were deleted before they were copied: passed, and counted as a gap."""
        return replace(self, offset=max(self.offset, offset), gaps=self.gaps + 1)

    def merged(self, other: SourcePosition) -> SourcePosition:
        """Field by field the furthest of two positions of one (region, partition): what a reader
        may claim once both are reflected."""
        return SourcePosition(
            offset=max(self.offset, other.offset),
            accepted_at_ms=max(self.accepted_at_ms, other.accepted_at_ms),
            heartbeat_at_ms=max(self.heartbeat_at_ms, other.heartbeat_at_ms),
            gaps=max(self.gaps, other.gaps),
        )


SourceKey = tuple[str, int]
"""(accepting region, partition): what an asOf position is named by (DESIGN I5)."""


def merge_marks(
    older: Mapping[SourceKey, SourcePosition], newer: Mapping[SourceKey, SourcePosition]
) -> dict[SourceKey, SourcePosition]:
    """Per (region, partition), the furthest of two sets of positions."""
    merged = dict(older)
    for key, mark in newer.items():
        known = merged.get(key)
        merged[key] = mark if known is None else known.merged(mark)
    return merged


def merge_offsets(older: Mapping[SourceKey, int], newer: Mapping[SourceKey, int]) -> dict[SourceKey, int]:
    """Per (region, partition), the furthest offset of two position maps."""
    merged = dict(older)
    for key, offset in newer.items():
        merged[key] = max(offset, merged.get(key, -1))
    return merged
