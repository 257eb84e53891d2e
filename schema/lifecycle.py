"""Records of a board's lifecycle on the platform's topics and in its archive: close cutoffs, results.

- A **cutoff marker** (key ``\\x00cutoff|<board>``) is written by each region into every partition of
  its own awards topic once the board is closing; the first one of a board in a partition is that
  partition's cutoff. It is replicated like an award.
- **CutoffReached** (key ``\\x00cutoff|<board>|<region>`` in the totals topic) is the processor's
  record that it met that first marker: the totals before it in the partition hold every award of the
  board accepted by ``region`` before the cutoff. It is also the processor's changelog of cutoffs.
- A **correction record** (key ``\\x00correction|<board>|<user>``) is written by a closed board's home
  region into the awards partition of that player's key (``<board>|<user>``), one per adjusted
  player: the player's corrected final score, published as result version ``result_version``. It
  is replicated like an award; every region's processor applies it as a new versioned absolute total.
- **CorrectionsHeld** (key ``\\x00held|<board>`` in the totals topic) lists the correction records a
  processor task met before it had met every region's cutoff of the board: they wait until it has
  (compaction keeps the newest list, empty once they are applied).
- A **result chunk** is a fixed-size slice of an archived result, in rank order.
"""

from __future__ import annotations

import msgspec

CUTOFF_PREFIX = b"\x00cutoff|"
CORRECTION_PREFIX = b"\x00correction|"
HELD_PREFIX = b"\x00held|"


def cutoff_marker_key(board_id: str) -> bytes:
    """Key of a board's cutoff marker in an awards topic."""
    return CUTOFF_PREFIX + board_id.encode()


def cutoff_reached_key(board_id: str, region: str) -> bytes:
    """Key of a CutoffReached record in a totals partition: compaction keeps one per board and region."""
    return CUTOFF_PREFIX + f"{board_id}|{region}".encode()


class CutoffMarker(msgspec.Struct, frozen=True, kw_only=True):
    """The value of a cutoff marker: which board, which region wrote it, and when the board began closing."""

    board_id: str
    region: str
    closing_at_ms: int
    written_at_ms: int


class CutoffReached(msgspec.Struct, frozen=True, kw_only=True, tag="cutoff"):
    """The first cutoff marker of ``board_id`` from ``region`` in ``source_partition`` is at
    ``source_offset`` of that region's awards topic; a totals record (see ``schema.records``)."""

    board_id: str
    region: str
    source_partition: int
    source_offset: int


def correction_key(board_id: str, user_id: str) -> bytes:
    """Key of a correction record in an awards topic (its partition is that of ``<board>|<user>``)."""
    return CORRECTION_PREFIX + f"{board_id}|{user_id}".encode()


def held_key(board_id: str) -> bytes:
    """Key of a task's CorrectionsHeld record of one board in a totals partition."""
    return HELD_PREFIX + board_id.encode()


class CorrectionRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One player's corrected final score on a closed board, published as result ``result_version``
    by correction ``correction_id``; ``region`` is the board's home region, which wrote it, and
    ``created_at_ms`` the correction's creation time (the time its dedupe is judged by). ``regions``
    are those the board closed with (its cutoffs'): a processor applies the record once it has met
    each one's cutoff. The board's order and tie policy travel with it, as with an award."""

    board_id: str
    correction_id: str
    user_id: str
    score: int
    result_version: int
    created_at_ms: int
    region: str
    sort_order: str
    tie_policy: str
    regions: list[str]


class HeldCorrection(msgspec.Struct, frozen=True, array_like=True):
    """A correction record a task holds: the record, where it was read (``topic``, ``topic_offset``)
    and its offset in the writing region's awards topic (``source_offset``)."""

    correction: CorrectionRecord
    topic: str
    topic_offset: int
    source_offset: int


class CorrectionsHeld(msgspec.Struct, frozen=True, kw_only=True, tag="held"):
    """The corrections of ``board_id`` a processor task holds until it has met every region's cutoff
    of the board in its partition (the board's fold is final there only then); a totals record."""

    board_id: str
    corrections: list[HeldCorrection]


class ResultChunk(msgspec.Struct, frozen=True, array_like=True):
    """Ranked entries of an archived result: (user id, score, version, tie order key), from
    ``first_rank`` on. The tie order key is empty on a USER_ID board. ``metadata`` holds, by index
    in ``entries``, the metadata (JSON text) of the entries that have some (none in chunks written
    before results carried it). ``verified``, by index, the verified counts of an approximate
    board's candidates, whose scores are estimates (none in chunks written before results kept them
    apart: those kept them in ``metadata``); a reader that predates it ignores it."""

    first_rank: int
    entries: list[tuple[str, int, int, str]]
    metadata: dict[int, str] = msgspec.field(default_factory=dict)
    verified: dict[int, int] = msgspec.field(default_factory=dict)


class LifecycleCodec:
    """Encoders and decoders of the lifecycle records, built once per process."""

    def __init__(self) -> None:
        self.encode = msgspec.msgpack.Encoder().encode
        self.marker = msgspec.msgpack.Decoder(CutoffMarker).decode
        self.correction = msgspec.msgpack.Decoder(CorrectionRecord).decode
        self.chunk = msgspec.msgpack.Decoder(ResultChunk).decode
