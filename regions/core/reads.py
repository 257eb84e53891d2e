"""What a read of a ranking projection answers: ranked entries, pages and neighbourhoods, each with
the asOf it reflects. Pure values and the rules that build them from one atomic window read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from regions.core.boards import Board, BoardStatus, TiePolicy
from regions.core.freshness import RegionStatus
from regions.core.lifecycle import parse_position_name
from regions.core.ordering import REACHED_WIDTH, user_of
from regions.core.positions import SourceKey


class Scope(StrEnum):
    """Which projection answers: the board's canonical one (``HOME``) or this region's."""

    HOME = "HOME"
    REGIONAL = "REGIONAL"


@dataclass(frozen=True, slots=True)
class RankedEntry:
    rank: int  # 1-based, ordinal
    user_id: str
    score: int
    version: int


@dataclass(frozen=True, slots=True)
class AsOf:
    """What a response reflects: ``region`` names the projection that answered; every award the
    accepting region r acknowledged at (p, o) with ``positions[(r, p)] >= o`` is in it."""

    region: str
    positions: dict[SourceKey, int]
    newest_accepted_ms: int | None
    stale: bool  # the projection is being rebuilt or lost its positions
    regions: tuple[RegionStatus, ...] = ()  # freshness per accepting region (see core.freshness)


@dataclass(frozen=True, slots=True)
class RankPage:
    entries: list[RankedEntry]
    as_of: AsOf


@dataclass(frozen=True, slots=True)
class PlayerContext:
    player: RankedEntry
    above: list[RankedEntry]  # better ranked, nearest last
    below: list[RankedEntry]  # worse ranked, nearest first
    as_of: AsOf


@dataclass(frozen=True, slots=True)
class Window:
    """One atomic read: ``rank`` (0-based, -1 for a top read), ``first`` rank, board size, and the
    (member, record) pairs in rank order; a record is ``version|total|member``."""

    rank: int
    first: int
    count: int
    rows: list[tuple[str, str]]


def board_positions(board: Board, live: Mapping[SourceKey, int]) -> dict[SourceKey, int]:
    """What a read of ``board`` claims: the projection's positions, or for a CLOSED board its cutoffs
    (every award before them is in its frozen standings, none after), each no further than this
    projection has reached (a region still replicating up to a cutoff claims only what it holds)."""
    if board.status is not BoardStatus.CLOSED or not board.cutoffs:
        return dict(live)
    claimed = {}
    for name, cutoff in board.cutoffs:
        key = parse_position_name(name)
        if key in live:
            claimed[key] = min(live[key], cutoff)
    return claimed


def member_strip(board: Board) -> int:
    """Length of the sorted-set member's prefix before the user id (the tie prefix and its ``|``)."""
    return REACHED_WIDTH + 1 if board.tie_policy is TiePolicy.FIRST_REACHED else 0


def entries_of(board: Board, window: Window) -> list[RankedEntry]:
    """Rows of a window as ranked entries."""
    entries = []
    for i, (member, record) in enumerate(window.rows):
        version, total, _ = record.split("|", 2)
        entries.append(
            RankedEntry(window.first + i + 1, user_of(board.tie_policy, member), int(total), int(version))
        )
    return entries


def context_of(board: Board, window: Window, as_of: AsOf) -> PlayerContext:
    """A player's window as the player with the neighbours above and below."""
    entries = entries_of(board, window)
    at = window.rank - window.first
    return PlayerContext(entries[at], entries[:at], entries[at + 1 :], as_of)
