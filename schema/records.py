"""Records every service shares: what travels on the platform's Kafka topics.

msgspec Structs: frozen, compact, and decoded without per-field Python code on hot paths.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, TypeVar

import msgspec
import msgspec.msgpack

from schema.erasure import Erased as Erased  # a record of the totals topic
from schema.lifecycle import CUTOFF_PREFIX as CUTOFF_PREFIX  # a control key of the awards topic
from schema.lifecycle import CorrectionsHeld as CorrectionsHeld  # a record of the totals topic
from schema.lifecycle import CutoffReached as CutoffReached  # a record of the totals topic
from schema.moderation import Moderated as Moderated  # a record of the totals topic
from schema.sketch import CandidateSet as CandidateSet  # a record of the totals topic
from schema.sketch import SketchBlock as SketchBlock  # a record of the totals topic
from schema.windows import EXPIRY_PREFIX as EXPIRY_PREFIX  # a control key of the awards topic
from schema.windows import ExpiryMarker as ExpiryMarker  # a control record of the awards topic
from schema.windows import ExpiryReached as ExpiryReached  # a record of the totals topic

log = logging.getLogger(__name__)
T = TypeVar("T")


class AwardEvent(msgspec.Struct, frozen=True, kw_only=True):
    """An accepted award on the awards topic (key ``boardId|userId``).

    ``amount`` is the delta of a SUM board or the score of a MAX/MIN board. ``region`` accepted it;
    ``home_region`` is the board's home region when it was accepted, whose audit sink records it
    (empty in awards accepted before it was stamped); ``shards`` its shard count then. ``window`` is
    the board's time window as the catalog stores it (``regions.core.windows``; empty: all-time): the
    award counts in the period, or the rolling day, that holds its event time, ``occurred_at_ms`` or
    else ``accepted_at_ms``. ``metadata`` is the award's metadata as canonical JSON text (compact,
    keys sorted; empty: none, as in awards accepted before awards carried it). ``approximate`` is
    the board's approximate settings (``regions.core.approximate``, ``k,epsilon,delta``; empty: an
    exact board): the award counts in the board's sketch, not in a player state.
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
    home_region: str = ""
    shards: int = 1  # the board's shards in the catalog when it was accepted (1 in older awards)
    window: str = ""
    metadata: str = ""
    approximate: str = ""

    @property
    def event_at_ms(self) -> int:
        """When the award happened, for time windows: ``occurred_at_ms``, else its acceptance."""
        return self.accepted_at_ms if self.occurred_at_ms is None else self.occurred_at_ms


SEEN_BYTES = 16
EVENT_ID_BYTES = 16  # a dedupe changelog key: the event id's 32 hex digits as bytes
"""Least size of a dedupe changelog value: 8 bytes of payload digest (the binary form of its hex),
then 8 of acceptance time in ms (big-endian, signed); since copies of an event id pick a winner, also
8 of the copy's amount (signed) and its accepting region (UTF-8, the rest). The key is the event id's
16 bytes. A value of only 16 bytes was written before amounts were kept."""
COMPLETE_KEY = b"\x00complete"
"""Key of the dedupe changelog's completeness record: 8 bytes (signed), a time before which the
memory may have forgotten copies (``regions.core.aggregation.DedupeMemory.complete_since_ms``)."""


def pack_seen(digest: str, at_ms: int, region: str = "", amount: int | None = None) -> bytes:
    head = bytes.fromhex(digest) + at_ms.to_bytes(8, "big", signed=True)
    if amount is None:
        return head
    return head + amount.to_bytes(8, "big", signed=True) + region.encode()


def unpack_seen(value: bytes) -> tuple[str, int, str, int | None]:
    """(digest, acceptance time in ms, region, amount) of a packed dedupe value; ValueError when it
    is not one."""
    if len(value) != SEEN_BYTES and len(value) < SEEN_BYTES + 8:
        raise ValueError(
            f"a dedupe value has {SEEN_BYTES} or at least {SEEN_BYTES + 8} bytes, not {len(value)}"
        )
    at_ms = int.from_bytes(value[8:16], "big", signed=True)
    if len(value) == SEEN_BYTES:
        return value[:8].hex(), at_ms, "", None
    amount = int.from_bytes(value[16:24], "big", signed=True)
    return value[:8].hex(), at_ms, value[24:].decode(errors="replace"), amount


def dedupe_key(event_id: str) -> bytes:
    """Kafka key of the dedupe changelog: the event id's 16 bytes."""
    return bytes.fromhex(event_id)


class PlayerTotal(msgspec.Struct, frozen=True, kw_only=True, tag="total"):
    """Versioned absolute total of one player on one board: the totals topic value.

    The totals topic is also the processor's compacted changelog of player state (the dedupe memory
    has a changelog of its own, keyed by event id). ``version`` grows by one per applied award;
    ``source_region`` and ``source_offset`` name the award in its accepting region's awards topic.
    ``event_id`` names the award (the winning copy) that made this version, if one did. On a ROLLING board ``buckets`` holds the player's days in the window (the state a processor
    restores) and ``removed`` says the player has no points left there: it leaves the board, and
    only a newer version brings it back. On a windowed board with periods, ``board_id`` is the
    period's (``schema.scoped``).
    """

    board_id: str
    user_id: str
    total: int
    version: int
    reached: str
    sort_order: str
    tie_policy: str
    source_partition: int
    source_offset: int
    event_id: str
    source_region: str = ""
    shards: int = 1  # the board's shards, from the award: the layout of a board not yet projected
    buckets: tuple[tuple[int, int, str], ...] = ()
    removed: bool = False
    # MAX/MIN boards: (tie key, score) of the awards the best may be recomputed from when a winning
    # copy replaces one (``regions.core.aggregation.PlayerState.contributions``)
    # LATEST boards: (latest key, score) of the latest awards (``regions.core.latest``)
    contributions: tuple[tuple[str, int], ...] = ()
    # The metadata of the award that holds the total (canonical JSON text, empty: none), and the
    # (tie key, metadata) of the kept contributions that have some
    # (``regions.core.aggregation.PlayerState.notes``)
    metadata: str = ""
    notes: tuple[tuple[str, str], ...] = ()
    hidden: bool = False  # hidden by moderation (``schema.moderation``): off the board, still counting
    # An approximate board's candidate (``schema.sketch``): ``total`` is its estimate, ``version``
    # its candidate list's; the processor keeps no player state for it. ``exact``: its exact count
    # when verified (every award of the item counted since its first), else None
    estimated: bool = False
    exact: int | None = None


class Watermark(msgspec.Struct, frozen=True, kw_only=True, tag="watermark"):
    """Written to a totals partition at the end of each processor transaction, one per (region,
    partition) the transaction read: every award accepted by ``region`` in that partition up to
    ``source_offset`` (inclusive, an offset of the accepting region's awards topic) is reflected in
    the totals before it. ``accepted_at_ms`` is the newest acceptance time and ``heartbeat_at_ms`` the
    newest heartbeat time seen there; ``gaps`` counts replication gaps reported for it (records the
    accepting region deleted before they were copied: the position then overstates what is in)."""

    source_partition: int
    source_offset: int
    accepted_at_ms: int
    region: str = ""
    heartbeat_at_ms: int = 0
    gaps: int = 0


class Heartbeat(msgspec.Struct, frozen=True, kw_only=True):
    """A control record (key ``HEARTBEAT_KEY``) a region writes periodically to every awards
    partition, so positions advance while a partition is idle and silence can be told apart."""

    region: str
    at_ms: int


class AppliedAward(msgspec.Struct, frozen=True, kw_only=True):
    """An award the processor applied, with the total it produced: the audit feed."""

    award: AwardEvent
    total: int
    version: int
    source_partition: int
    source_offset: int
    source_region: str = ""


class Reconciliation(msgspec.Struct, frozen=True, kw_only=True):
    """An award that was not applied, or not audited, and needs a person: a conflicting repeat, an
    out-of-range total, a late award, or a record that could not be decoded or processed (``award``
    is then None). ``raw`` holds the record's value as it was, when the writer kept it.

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
    source_region: str = ""


TotalsRecord = (
    PlayerTotal | Watermark | CutoffReached | CorrectionsHeld | ExpiryReached | Moderated | Erased
    | SketchBlock | CandidateSet
)  # fmt: skip

CONTROL_PREFIX = b"\x00"
"""Keys of control records start with a zero byte; no award key (``boardId|userId``) does. A consumer
ignores a control record it does not know, and never reads one as an award."""
WATERMARK_KEY = b"\x00watermark"
HEARTBEAT_KEY = b"\x00hb"


def only_time(key: bytes | None) -> bool:
    """Whether a record only says that time passed (a heartbeat, a watermark): no work for a reader."""
    return key is not None and (key == HEARTBEAT_KEY or key.startswith(WATERMARK_KEY))


def watermark_key(region: str) -> bytes:
    """Kafka key of a region's watermark in a totals partition: compaction keeps one per region."""
    return WATERMARK_KEY + b"|" + region.encode()


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
        self.applied = msgspec.msgpack.Decoder(AppliedAward).decode
        self.reconciliation = msgspec.msgpack.Decoder(Reconciliation).decode
        self.heartbeat = msgspec.msgpack.Decoder(Heartbeat).decode
        self.expiry = msgspec.msgpack.Decoder(ExpiryMarker).decode
