"""Archived results of closed boards: ranked entries in fixed-size chunks, and pages of them.
Pure: no I/O, no clock.

Rules kept here (and property-tested):
- a result lists every player once, in the board's rank order (``regions.core.ordering.rank_key``);
  chunk ``i`` holds ranks ``i*size+1 .. (i+1)*size``, so where a rank lives follows from the rank.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ResultEntry:
    """One ranked player of a result; ``reached`` is the tie order key ("" on a USER_ID board)."""

    user_id: str
    score: int
    version: int
    reached: str = ""
    metadata: str = ""  # of the award that held the score (JSON text); empty: none


def chunk_count(players: int, size: int) -> int:
    return -(-players // size)


def page_chunks(after: int, first: int, size: int, players: int) -> range:
    """The chunks holding ranks ``after+1 .. after+first`` of a result of ``players``."""
    last_rank = min(after + first, players)
    if first <= 0 or after >= last_rank:
        return range(0)
    return range(after // size, (last_rank - 1) // size + 1)


def page(
    chunks: Mapping[int, Sequence[ResultEntry]], after: int, first: int, size: int
) -> list[tuple[int, ResultEntry]]:
    """(rank, entry) of ranks ``after+1 .. after+first`` found in ``chunks`` (by chunk number)."""
    found = []
    for number in sorted(chunks):
        for i, entry in enumerate(chunks[number]):
            rank = number * size + i + 1
            if after < rank <= after + first:
                found.append((rank, entry))
    return found
