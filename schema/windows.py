"""Records of ROLLING boards on the platform's topics: expiry markers and what the processor met.

- An **expiry marker** (key ``\\x00expiry|<board>``) is written by the board's home region into every
  partition of its own awards topic when a day leaves the board's window: every day up to
  ``expired_through`` (a local day's ordinal) is out. It carries the board's rules, so a processor
  needs no catalog to fold what is left. It is replicated like an award; a marker that expires
  nothing new (a repeat, an older one) changes nothing.
- **ExpiryReached** (key ``\\x00expiry|<board>`` in the totals topic) is the processor's record that
  it applied that marker: the totals before it in the partition reflect the expiry. It is also the
  processor's changelog of expired days.
"""

from __future__ import annotations

import msgspec

EXPIRY_PREFIX = b"\x00expiry|"


def expiry_key(board_id: str) -> bytes:
    """Key of a board's expiry marker in an awards topic, and of ExpiryReached in a totals topic
    (compaction keeps the newest: days only ever expire forward)."""
    return EXPIRY_PREFIX + board_id.encode()


class ExpiryMarker(msgspec.Struct, frozen=True, kw_only=True):
    board_id: str
    region: str  # the home region, which wrote it
    expired_through: int
    aggregation: str
    sort_order: str
    tie_policy: str
    window: str
    written_at_ms: int


class ExpiryReached(msgspec.Struct, frozen=True, kw_only=True, tag="expiry"):
    """Every day of ``board_id`` up to ``expired_through`` has left the window in this partition's
    totals (a totals record, see ``schema.records``)."""

    board_id: str
    expired_through: int
    source_region: str
    source_partition: int
    source_offset: int
