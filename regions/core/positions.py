"""How far a processor task has read each accepting region's awards in one partition (asOf).

Pure: the position of a (region, partition) only moves forward, by the records the task reads from
any source topic, whatever their order across sources.
"""

from __future__ import annotations

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
