"""Rules of copying one region's accepted awards into another region. Pure: no I/O, no clock.

- **Where to resume** a source partition, given the checkpoint and the source's log start and end
  (``regions.core.resume``): from the checkpoint; or, when the source deleted records that were
  never copied, from its log start after reporting a gap; never silently from somewhere else.
- **No second hop**: only records the source region accepted itself are copied. A record that
  carries another origin, or a hop count above 0, is a copy and is skipped (still checkpointed).
- **A batch** becomes copies with provenance headers and the next checkpoint, in one unit.
- **Lag** in records and seconds from the checkpoint and the source's end; while the source does
  not answer, in seconds since the newest copied record (a silent source is not a caught-up one).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import msgspec

from regions.core.resume import Gap
from schema.replication import (
    HOP_HEADER,
    ORIGIN_HEADER,
    SOURCE_OFFSET_HEADER,
    SOURCE_PARTITION_HEADER,
    ReplicationCheckpoint,
)

Headers = tuple[tuple[str, bytes], ...]


class SourceRecord(msgspec.Struct, frozen=True):
    """One record read from the source's awards partition (committed data only). A Struct, as
    every record passes through here: several times cheaper to build than a frozen dataclass."""

    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: Headers = ()


class Copy(msgspec.Struct, frozen=True):
    """One record to write into the local ``awards.from-<source>`` partition of the same number."""

    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: Headers


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """What one batch of a partition writes, all in one transaction: the copies, then the checkpoint."""

    copies: tuple[Copy, ...]
    skipped: int
    checkpoint: ReplicationCheckpoint


@dataclass(frozen=True, slots=True)
class Lag:
    records: int
    seconds: float | None  # None: behind, but no copied record's time is known yet


def header(headers: Headers, name: str) -> bytes | None:
    """The last value of header ``name``, or None."""
    found = None
    for key, value in headers:
        if key == name:
            found = value
    return found


def accepted_by(source_region: str, headers: Headers) -> bool:
    """Whether the record was accepted by ``source_region`` itself (so may be copied once).

    A record without provenance headers is the source's own. One naming another origin, or with a
    hop count that is not 0 (or unreadable), is a copy: copying it again could loop between regions.
    """
    if not headers:
        return True
    origin = header(headers, ORIGIN_HEADER)
    if origin is not None and origin != source_region.encode():
        return False
    hop = header(headers, HOP_HEADER)
    return hop is None or hop == b"0"


def provenance(source_region: str, partition: int, offset: int) -> Headers:
    """Headers of a copy: where it was accepted, its source position, and one hop."""
    return _provenance(_origin(source_region, partition), offset)


def _origin(source_region: str, partition: int) -> tuple[tuple[str, bytes], tuple[str, bytes]]:
    return (ORIGIN_HEADER, source_region.encode()), (SOURCE_PARTITION_HEADER, str(partition).encode())


def _provenance(origin: tuple[tuple[str, bytes], tuple[str, bytes]], offset: int) -> Headers:
    return (*origin, (SOURCE_OFFSET_HEADER, str(offset).encode()), (HOP_HEADER, b"1"))


def plan_batch(
    source_region: str, partition: int, checkpoint: ReplicationCheckpoint, records: Sequence[SourceRecord]
) -> BatchPlan:
    """Copies of the source's own records after the checkpoint, and the checkpoint after them.

    Records before the checkpoint were copied already and are left out, so planning a batch twice
    copies nothing twice. Offsets must increase (they do within a Kafka partition).
    """
    fresh = [r for r in records if r.offset >= checkpoint.next_offset]
    for before, then in pairwise(fresh):
        if then.offset <= before.offset:
            raise ValueError(f"offsets must increase: {before.offset} then {then.offset}")
    origin = _origin(source_region, partition)
    copies = tuple(
        Copy(r.key, r.value, r.timestamp_ms, _provenance(origin, r.offset))
        for r in fresh
        if accepted_by(source_region, r.headers)
    )
    if not fresh:
        return BatchPlan((), 0, checkpoint)
    last = fresh[-1]
    after = ReplicationCheckpoint(
        source_region=source_region, source_partition=partition, next_offset=last.offset + 1,
        last_record_ms=last.timestamp_ms,
    )  # fmt: skip
    return BatchPlan(copies, len(fresh) - len(copies), after)


def after_gap(checkpoint: ReplicationCheckpoint, gap: Gap) -> ReplicationCheckpoint:
    """The checkpoint once a gap is reported: the missing records are accounted for."""
    return ReplicationCheckpoint(
        source_region=checkpoint.source_region, source_partition=checkpoint.source_partition,
        next_offset=gap.first_available, last_record_ms=checkpoint.last_record_ms,
    )  # fmt: skip


def latest_checkpoints(
    source_region: str, partitions: Iterable[int], written: Iterable[ReplicationCheckpoint]
) -> dict[int, ReplicationCheckpoint]:
    """Each partition's checkpoint: the last one written for it by this source's replicator, or a
    start at offset 0 when there is none. ``written`` is in log order."""
    found = {
        p: ReplicationCheckpoint(
            source_region=source_region, source_partition=p, next_offset=0, last_record_ms=None
        )
        for p in partitions
    }
    for checkpoint in written:
        if checkpoint.source_region == source_region and checkpoint.source_partition in found:
            found[checkpoint.source_partition] = checkpoint
    return found


def lag(checkpoint: ReplicationCheckpoint, log_end: int, now_ms: int, source_answers: bool = True) -> Lag:
    """Records between the checkpoint and the source's end, and how old the newest copied record
    is while any remain: an upper bound of the oldest uncopied record's age (it came later).

    While the source does not answer, ``log_end`` is the end it last reported, so the records are a
    lower bound, and the seconds are the newest copied record's age even when none remained then:
    every region writes a heartbeat to each partition every second, so a source that went silent
    has accepted records since, and its lag grows with the time nothing was heard from it."""
    records = max(0, log_end - checkpoint.next_offset)
    if records == 0 and source_answers:
        return Lag(0, 0.0)
    if checkpoint.last_record_ms is None:
        return Lag(records, None)
    return Lag(records, max(0.0, (now_ms - checkpoint.last_record_ms) / 1000))
