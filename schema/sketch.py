"""Records of approximate (trending) boards in the totals topic: the processor's state changelog.

- **SketchBlock** (key ``\\x00sketch|<board>|<row>|<block>``): the absolute counters of one block of
  the Count-Min Sketch of one board (the period's id on a board with periods) in this partition,
  written once per transaction that changed it; compaction keeps the newest, so a restore rebuilds
  the sketch exactly.
- **CandidateSet** (key ``\\x00candidates|<board>``): the partition's candidate list, its version
  and the partition's counted total, with each candidate's exact count since it joined and whether
  that count is verified (all of the item's), and whether the list ever dropped an item
  (``regions.core.candidates``). The candidates themselves also go to the totals topic as
  versioned ``PlayerTotal`` records (``estimated``, with ``exact`` when verified), and an item no
  longer listed as a tombstone of its key, so the projection applies them like any total; the
  partition's total goes there as the total of member ``p<partition>`` of the companion board
  ``schema.scoped.counts_board_id(board)``, from which reads take the error bound.
"""

from __future__ import annotations

import msgspec

SKETCH_PREFIX = b"\x00sketch|"
CANDIDATES_PREFIX = b"\x00candidates|"


def sketch_key(board_id: str, row: int, block: int) -> bytes:
    return SKETCH_PREFIX + f"{board_id}|{row}|{block}".encode()


def candidates_key(board_id: str) -> bytes:
    return CANDIDATES_PREFIX + board_id.encode()


class SketchBlock(msgspec.Struct, frozen=True, kw_only=True, tag="sketch"):
    board_id: str
    row: int
    block: int
    counters: list[int]


class CandidateSet(msgspec.Struct, frozen=True, kw_only=True, tag="candidates"):
    board_id: str
    version: int
    total: int
    items: list[tuple[str, int]]  # (item, estimate), best first
    # For each of ``items``, in order: (exact count since it joined, verified); empty in records
    # written before exact counts were kept (then none is verified)
    exact: list[tuple[int, bool]] = []
    lossless: bool = False  # the list never dropped an item (absent in older records: not known)
