"""Where a reader continues a partition of a log that retention trims, from the offset it has reached.
Pure: no I/O.

- From that offset, while the log still holds it.
- From the log's start after reporting a **gap** when retention deleted records it had not read:
  they are gone for good, so they are counted and named, never passed in silence.
- Never by itself when the log ends before that offset (**rewound**: its topic was made again or
  truncated): its offsets no longer name what was read, so the reader's own rule decides.

Every reader of a log it must not skip uses it: the replicator (copies), the processor (awards), the
audit sink (history rows).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resume:
    """Continue at ``offset``."""

    offset: int


@dataclass(frozen=True, slots=True)
class Gap:
    """Records ``first_missing`` .. ``first_available - 1`` are gone unread: report them, then
    continue at ``first_available``."""

    first_missing: int
    first_available: int

    @property
    def missing(self) -> int:
        return self.first_available - self.first_missing


@dataclass(frozen=True, slots=True)
class Rewound:
    """The partition ends before the offset reached (``checkpoint``): its topic was made again or
    truncated, and its offsets no longer name the records read so far."""

    checkpoint: int
    log_end: int


def resume(next_offset: int, log_start: int, log_end: int) -> Resume | Gap | Rewound:
    """Where to continue a partition whose next offset to read is ``next_offset`` (0 when nothing was
    read yet, so records deleted before the first read are a gap too)."""
    if next_offset > log_end:
        return Rewound(next_offset, log_end)
    if next_offset < log_start:
        return Gap(next_offset, log_start)
    return Resume(next_offset)
