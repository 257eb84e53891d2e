"""What a read of a ranking projection answers: ranked entries, pages and neighbourhoods, each with
the asOf it reflects. Pure values and the rules that build them from one atomic window read.
"""

from __future__ import annotations

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
    shared_rank: int  # 1 + the entries with a strictly better score (ties share it: 1, 1, 3)
    top_percent: float  # 100 * rank / the board's size of the same read (see top_percent)
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
    ``first`` rank, board size, the (member, score, version, metadata) rows in rank order, and
    ``above``: the entries with a strictly better score than the first row (an ``around`` read whose
    rows start after its placed entry: than that entry), which shared ranks start from."""

    rank: int
    first: int
    count: int
    rows: list[Row]
    above: int


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


def top_percent(rank: int, count: int) -> float:
    """Where ``rank`` stands on a board of ``count`` players: 100 * rank / count (the best of 200 is
    in the top 0.5 %, the last in the top 100 %); 0 for no board."""
    return 100.0 * rank / count if count > 0 else 0.0


def shared_ranks(window: Window) -> list[int]:
    """The competition rank of each row: 1 + the entries with a strictly better score. Rows of
    equal score are adjacent, so a row shares the rank of the one before when their scores are
    equal, and otherwise every entry ranked before it is strictly better."""
    ranks: list[int] = []
    for i, row in enumerate(window.rows):
        if i == 0:
            ranks.append(window.above + 1)
        elif float(row[1]) == float(window.rows[i - 1][1]):
            ranks.append(ranks[-1])
        else:
            ranks.append(window.first + i + 1)
    return ranks


def entry_of(
    board: Board, rank: int, row: Row, shared_rank: int | None = None, count: int = 0
) -> RankedEntry:
    """A row as a ranked entry (``rank`` 1-based; ``shared_rank`` ``rank`` unless given; ``count``
    the board's size of the read)."""
    member, score, version, metadata = row
    if version is None:
        raise BrokenProjection(f"{board.id}: {member} is ranked but has no version record")
    return RankedEntry(
        rank, user_of(board.tie_policy, member), total_of(board.sort_order, float(score)), int(version),
        rank if shared_rank is None else shared_rank, top_percent(rank, count), metadata,
    )  # fmt: skip


def entries_of(board: Board, window: Window) -> list[RankedEntry]:
    """Rows of a window as ranked entries."""
    return [
        entry_of(board, window.first + i + 1, row, shared, window.count)
        for i, (row, shared) in enumerate(zip(window.rows, shared_ranks(window), strict=True))
    ]


def context_of(board: Board, window: Window, as_of: AsOf) -> PlayerContext:
    """A player's window as the player with the neighbours above and below."""
    entries = entries_of(board, window)
    at = window.rank - window.first
    return PlayerContext(entries[at], entries[:at], entries[at + 1 :], as_of)


# ---- a sharded board: each shard is read on its own, the answers are merged here


def row_order(row: Row) -> tuple[float, str]:
    """Redis's order of a row: score, then member (code points order as UTF-8 bytes do)."""
    return float(row[1]), row[0]


def _merged(*ordered: Sequence[Row]) -> list[Row]:
    """Rows of several sequences in rank order, each in rank order: sorted whole, which for the few
    rows of a read costs less than a merge step by step (a row of one shard never equals another's)."""
    return sorted(itertools.chain(*ordered), key=row_order)


def merged_top(windows: Sequence[Window], k: int) -> Window:
    """The best ``k`` of a board from each shard's best ``k``."""
    rows = _merged(*(w.rows for w in windows))
    return Window(-1, 0, sum(w.count for w in windows), rows[:k], 0)


def merged_context(owner: Window, others: Sequence[Window], around: int) -> Window:
    """A player's window across shards: ``owner`` is the player's own shard's window (``around``
    each side), ``others`` the other shards' ``around`` reads at the player's (score, member). The
    player's rank is the sum of the entries ranked better in every shard; the nearest ``around``
    each side are among the shards' nearest ``around``. The entries with a strictly better score
    than the merged window's first row are summed over the shards (``_above_in``)."""
    at = owner.rank - owner.first
    above = _merged(owner.rows[:at], *(w.rows[: w.rank - w.first] for w in others))
    below = _merged(owner.rows[at + 1 :], *(w.rows[w.rank - w.first :] for w in others))
    rank = owner.rank + sum(w.rank for w in others)
    above = above[max(0, len(above) - around) :]
    rows = [*above, owner.rows[at], *below[:around]]
    score = float(rows[0][1])
    lead = float(owner.rows[at][1])
    better = _above_in(owner, score, None) + sum(_above_in(w, score, lead) for w in others)
    return Window(rank, rank - len(above), owner.count + sum(w.count for w in others), rows, better)


def _lead_of(window: Window, placed: float | None) -> float | None:
    """The score ``window.above`` counts from: its first row's, or for an ``around`` read whose rows
    start after the ``placed`` entry, that entry's."""
    if placed is not None and window.first == window.rank:
        return placed
    return float(window.rows[0][1]) if window.rows else None


def _above_in(window: Window, score: float, placed: float | None) -> int:
    """A shard's entries with a strictly better score than ``score``, the merged window's first row.
    That row is at least as far up as the shard's lead (every shard read its nearest ``around``
    above the player, the merge keeps the nearest ``around`` of them all), so the shard's entries
    before its window are all strictly better unless they tie ``score``, which only the lead can."""
    if score == _lead_of(window, placed):
        return window.above
    return window.first + sum(1 for row in window.rows if float(row[1]) < score)
