"""Heartbeats and replication gaps, the control records that only move their region's position, the
records retention deleted unread (a gap too), and the watermarks that report every position the
round read at the end of its transaction."""

from __future__ import annotations

import logging

from regions.core.resume import Gap
from regions.processor.round.state import Output, RoundState, Source, decode_or_refuse
from schema.records import Watermark, watermark_key
from schema.replication import ReplicationCodec

log = logging.getLogger(__name__)


class SourcePositions:
    """How far the round read each accepting region's awards partition."""

    def __init__(self, state: RoundState) -> None:
        self._state = state
        self._gap = ReplicationCodec().gap

    def heartbeat(self, source: Source, value: bytes, offset: int) -> None:
        state = self._state
        beat = decode_or_refuse(state.codec.heartbeat, value, "undecodable_control")
        state.positions[source.region] = state.position(source.region).after_heartbeat(offset, beat.at_ms)
        state.counts["heartbeat"] += 1

    def gap(self, source: Source, value: bytes, offset: int) -> None:
        """The replicator found awards deleted before it copied them: counted into the position."""
        state = self._state
        gap = decode_or_refuse(self._gap, value, "undecodable_control")
        log.warning(
            "replication gap: %s's awards %d..%d of partition %d were deleted before they were copied",
            gap.source_region, gap.first_missing, gap.first_available - 1, gap.source_partition,
        )  # fmt: skip
        state.positions[source.region] = state.position(source.region).after_gap(offset)
        state.counts["gap"] += 1

    def deleted(self, source: Source, gap: Gap) -> None:
        """Retention deleted records of ``source`` before the processor read them: a gap in their
        region's position, as a replication gap is. The position passes them when its offsets are
        the source's own; a replicated source's offsets name the accepting region's records, which
        the records left say."""
        state = self._state
        passed = -1 if source.replicated else gap.first_available - 1
        state.positions[source.region] = state.position(source.region).after_gap(passed)

    def watermarks(self) -> list[Output]:
        """One watermark per (region, partition) this round read, for the end of the transaction."""
        state = self._state
        state.settle()
        marks: list[Output] = []
        for region, p in sorted(state.positions.items()):
            if p.offset < 0:
                continue  # only a gap was reported: no offset of that region was read yet
            mark = Watermark(source_partition=state.partition, source_offset=p.offset,
                             accepted_at_ms=p.accepted_at_ms, region=region,
                             heartbeat_at_ms=p.heartbeat_at_ms, gaps=p.gaps)  # fmt: skip
            marks.append((state.kafka.topic("totals"), watermark_key(region), state.codec.encode(mark)))
        return marks
