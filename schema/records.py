"""Records every service shares: what travels on the platform's Kafka topics.

msgspec Structs: frozen, compact, and decoded without per-field Python code on hot paths.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, NamedTuple, TypeVar

import msgspec
import msgspec.msgpack

log = logging.getLogger(__name__)
T = TypeVar("T")


class AwardEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An accepted award on the awards topic (key ``boardId|userId``).

    ``amount`` is the delta of a SUM board or the score of a MAX/MIN board.
    """

    event_id: Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{32}$")]
    digest: Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{16}$")]
    board_id: str
    match_id: str
    user_id: str
    award_type: str
    amount: int
    occurred_at_ms: int | None
    region: str
    accepted_at_ms: int
    aggregation: str
    sort_order: str
    tie_policy: str


SEEN_BYTES = 32
"""Size of one remembered event in ``PlayerTotal.recent``: 16 bytes of event id and 8 of payload
digest (the binary form of their hex), then 8 of acceptance time in ms (big-endian, signed).
Packed, a player's dedupe memory is one bytes object instead of a tuple of objects: about 8x less
memory in the processor for a busy player."""


class SeenEvent(NamedTuple):
    """One remembered event, unpacked (for tests and tools; the processor keeps them packed)."""

    event_id: str
    digest: str
    at_ms: int


def pack_seen(event_id: str, digest: str, at_ms: int) -> bytes:
    return bytes.fromhex(event_id) + bytes.fromhex(digest) + at_ms.to_bytes(8, "big", signed=True)


def seen_at_ms(recent: bytes, at: int) -> int:
    """Acceptance time of the remembered event that starts at byte ``at``."""
    return int.from_bytes(recent[at + 24 : at + SEEN_BYTES], "big", signed=True)


def unpack_seen(recent: bytes) -> list[SeenEvent]:
    return [
        SeenEvent(recent[at : at + 16].hex(), recent[at + 16 : at + 24].hex(), seen_at_ms(recent, at))
        for at in range(0, len(recent), SEEN_BYTES)
    ]


class PlayerTotal(msgspec.Struct, frozen=True, kw_only=True, tag="total"):
    """Versioned absolute total of one player on one board: the totals topic value.

    The totals topic is also the processor's compacted changelog, so the record carries the whole
    state of the key, dedupe memory included. ``version`` grows by one per applied award.
    """

    board_id: str
    user_id: str
    total: int
    version: int
    reached: str
    recent: bytes  # dedupe memory, oldest first: SEEN_BYTES per event (see pack_seen)
    sort_order: str
    tie_policy: str
    source_partition: int
    source_offset: int
    event_id: str


class Watermark(msgspec.Struct, frozen=True, kw_only=True, tag="watermark"):
    """Written to a totals partition at the end of each processor transaction: every award of the
    source partition up to ``source_offset`` (inclusive) is reflected in the totals before it."""

    source_partition: int
    source_offset: int
    accepted_at_ms: int


class AppliedAward(msgspec.Struct, frozen=True, kw_only=True):
    """An award the processor applied, with the total it produced: the audit feed."""

    award: AwardEvent
    total: int
    version: int
    source_partition: int
    source_offset: int


class Reconciliation(msgspec.Struct, frozen=True, kw_only=True):
    """An award that was not applied, or not audited, and needs a person: a conflicting repeat, an
    out-of-range total, a late award, or a record that could not be decoded or processed (``award``
    is then None when it could not be decoded, and ``raw`` holds the record's value as it was).

    The record was at ``source_partition``/``source_offset`` of ``source_topic`` (empty in records
    written before the topic was recorded: the awards topic). Key: the source record's key.
    """

    reason: str
    detail: str
    award: AwardEvent | None
    source_partition: int
    source_offset: int
    source_topic: str = ""
    raw: bytes | None = None


class ProjectedView(msgspec.Struct, frozen=True, kw_only=True, tag="total"):
    """The part of a PlayerTotal the projection needs; decoding it skips the dedupe memory."""

    board_id: str
    user_id: str
    total: int
    version: int
    reached: str
    sort_order: str
    tie_policy: str


TotalsRecord = PlayerTotal | Watermark

WATERMARK_KEY = b"\x00watermark"


def totals_key(board_id: str, user_id: str) -> bytes:
    """Kafka key of awards and totals: one (board, player) always lands on one partition."""
    return f"{board_id}|{user_id}".encode()


def decoded(decode: Callable[[bytes], T], record_value: bytes, where: str) -> T | None:
    """Decode an internal record; None (logged, never raised) when it is not what the topic holds,
    so one bad record cannot stop a consumer."""
    try:
        return decode(record_value)
    except msgspec.DecodeError as exc:
        log.error("skipping an undecodable record at %s: %s", where, exc)
        return None


class Codec:
    """msgpack encoders and decoders of the internal topics, built once per process."""

    def __init__(self) -> None:
        self.encode = msgspec.msgpack.Encoder().encode
        self.award = msgspec.msgpack.Decoder(AwardEvent).decode
        self.totals = msgspec.msgpack.Decoder(TotalsRecord).decode
        self.projected = msgspec.msgpack.Decoder(ProjectedView | Watermark).decode
        self.applied = msgspec.msgpack.Decoder(AppliedAward).decode
        self.reconciliation = msgspec.msgpack.Decoder(Reconciliation).decode
