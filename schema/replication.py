"""What cross-region replication writes into a region's cluster, for the processor and operators.

The replicator of region R copies source region S's locally accepted awards topic, partition p to
partition p, into R's ``<prefix>.awards.from-S.v1``: same key, value and timestamp, plus the headers
below. Its progress lives in the compacted ``<prefix>.replication.checkpoints.v1`` (key
``S|p``, on partition p), written in the same transaction as the records it covers.
"""

from __future__ import annotations

import msgspec

ORIGIN_HEADER = "lb-origin"
"""The region that accepted the record (ASCII). Absent on a region's own awards topic."""
SOURCE_PARTITION_HEADER = "lb-source-partition"
"""The record's partition in the origin region's awards topic (ASCII decimal)."""
SOURCE_OFFSET_HEADER = "lb-source-offset"
"""The record's offset in the origin region's awards topic (ASCII decimal): asOf positions name it.
On a gap record, the last source offset accounted for (``first_available - 1``)."""
HOP_HEADER = "lb-hop"
"""How many times the record was copied (ASCII decimal): 1 on a replicated copy, never more."""

GAP_KEY = b"\x00gap"
"""Key of a :class:`ReplicationGap` control record in an ``awards.from-*`` topic."""


class ReplicationGap(msgspec.Struct, frozen=True, kw_only=True, tag="gap"):
    """Source records ``first_missing`` to ``first_available - 1`` of one partition were deleted
    before they could be copied: every award among them is missing in this region."""

    source_region: str
    source_partition: int
    first_missing: int
    first_available: int
    detected_at_ms: int


class ReplicationCheckpoint(msgspec.Struct, frozen=True, kw_only=True, tag="checkpoint"):
    """Every source record of the partition before ``next_offset`` is copied (or was reported
    missing); ``last_record_ms`` is the source timestamp of the last record it covers (None: none yet)."""

    source_region: str
    source_partition: int
    next_offset: int
    last_record_ms: int | None


def checkpoint_key(source_region: str, partition: int) -> bytes:
    return f"{source_region}|{partition}".encode()


class ReplicationCodec:
    """msgpack encoders and decoders of the replication records, built once per process."""

    def __init__(self) -> None:
        self.encode = msgspec.msgpack.Encoder().encode
        self.gap = msgspec.msgpack.Decoder(ReplicationGap).decode
        self.checkpoint = msgspec.msgpack.Decoder(ReplicationCheckpoint).decode


CHECKPOINTS_TOPIC = "replication.checkpoints"
"""Name (before prefix and version) of the compacted checkpoint topic of a region's replicators."""


def replicated_awards_topic(source_region: str) -> str:
    """Name (before prefix and version) of the topic holding ``source_region``'s awards here."""
    return f"awards.from-{source_region}"
