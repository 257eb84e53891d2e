"""What a read of a ranking projection answers: ranked entries, pages and neighbourhoods, each with
the asOf it reflects. Pure values and the rules that build them from one atomic window read.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from regions.core.boards import Board, BoardStatus, TiePolicy
from regions.core.freshness import RegionStatus
from regions.core.lifecycle import parse_position_name
from regions.core.ordering import REACHED_WIDTH, total_of, user_of
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
    metadata: str | None = None  # of the award that holds the score (JSON text); None: none


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


Row = tuple[str, str, str | None, str | None]
"""member, score, version (None: no version record), metadata (JSON text; None: none)"""


@dataclass(frozen=True, slots=True)
class Window:
    """One atomic read (or several shards' reads merged): ``rank`` (0-based, -1 for a top read),
    ``first`` rank, board size, and the (member, score, version, metadata) rows in rank order."""

    rank: int
    first: int
    count: int
    rows: list[Row]


class BrokenProjection(Exception):
    """A ranked member has no version record: the projection is not what its writer keeps."""


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
    return strip_of(board.tie_policy)


def strip_of(tie_policy: TiePolicy) -> int:
    return REACHED_WIDTH + 1 if tie_policy is TiePolicy.FIRST_REACHED else 0


def entry_of(board: Board, rank: int, row: Row) -> RankedEntry:
    """A row as a ranked entry (``rank`` 1-based)."""
    member, score, version, metadata = row
    if version is None:
        raise BrokenProjection(f"{board.id}: {member} is ranked but has no version record")
    return RankedEntry(
        rank, user_of(board.tie_policy, member), total_of(board.sort_order, float(score)), int(version),
        metadata,
    )  # fmt: skip


def entries_of(board: Board, window: Window) -> list[RankedEntry]:
    """Rows of a window as ranked entries."""
    return [entry_of(board, window.first + i + 1, row) for i, row in enumerate(window.rows)]


def context_of(board: Board, window: Window, as_of: AsOf) -> PlayerContext:
    """A player's window as the player with the neighbours above and below."""
    entries = entries_of(board, window)
    at = window.rank - window.first
    return PlayerContext(entries[at], entries[:at], entries[at + 1 :], as_of)


# ---- a sharded board: each shard is read on its own, the answers are merged here


def row_order(row: Row) -> tuple[float, str]:
    """Redis's order of a row: score, then member (code points order as UTF-8 bytes do)."""
    return float(row[1]), row[0]


def merged_top(windows: Sequence[Window], k: int) -> Window:
    """The best ``k`` of a board from each shard's best ``k``."""
    rows = heapq.merge(*(w.rows for w in windows), key=row_order)
    return Window(-1, 0, sum(w.count for w in windows), list(itertools.islice(rows, k)))


def merged_context(owner: Window, others: Sequence[Window], around: int) -> Window:
    """A player's window across shards: ``owner`` is the player's own shard's window (``around``
    each side), ``others`` the other shards' ``around`` reads at the player's (score, member). The
    player's rank is the sum of the entries ranked better in every shard; the nearest ``around``
    each side are among the shards' nearest ``around``."""
    at = owner.rank - owner.first
    above = list(heapq.merge(owner.rows[:at], *(w.rows[: w.rank - w.first] for w in others), key=row_order))
    below = list(
        heapq.merge(owner.rows[at + 1 :], *(w.rows[w.rank - w.first :] for w in others), key=row_order)
    )
    rank = owner.rank + sum(w.rank for w in others)
    above = above[max(0, len(above) - around) :]
    rows = [*above, owner.rows[at], *below[:around]]
    return Window(rank, rank - len(above), owner.count + sum(w.count for w in others), rows)
