"""Records of a board's lifecycle on the platform's topics and in its archive: close cutoffs, results.

- A **cutoff marker** (key ``\\x00cutoff|<board>``) is written by each region into every partition of
  its own awards topic once the board is closing; the first one of a board in a partition is that
  partition's cutoff. It is replicated like an award.
- **CutoffReached** (key ``\\x00cutoff|<board>|<region>`` in the totals topic) is the processor's
  record that it met that first marker: the totals before it in the partition hold every award of the
  board accepted by ``region`` before the cutoff. It is also the processor's changelog of cutoffs.
- A **result chunk** is a fixed-size slice of an archived result, in rank order.
"""

from __future__ import annotations

import msgspec

CUTOFF_PREFIX = b"\x00cutoff|"


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


class ResultChunk(msgspec.Struct, frozen=True, array_like=True):
    """Ranked entries of an archived result: (user id, score, version, tie order key), from
    ``first_rank`` on. The tie order key is empty on a USER_ID board."""

    first_rank: int
    entries: list[tuple[str, int, int, str]]


class LifecycleCodec:
    """Encoders and decoders of the lifecycle records, built once per process."""

    def __init__(self) -> None:
        self.encode = msgspec.msgpack.Encoder().encode
        self.marker = msgspec.msgpack.Decoder(CutoffMarker).decode
        self.chunk = msgspec.msgpack.Decoder(ResultChunk).decode
