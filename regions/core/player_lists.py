"""Ranks of a list of players (a friends list) on a whole board: each player's rank, shared rank and
topPercent as one read of every shard answers them, and their order among the list. Pure.

On a sharded board a player's own shard gives its rank there and the entries with a strictly better
score there; every other shard counts, at the player's (score, member), the entries ranked better
and those strictly better. The board's rank is 1 + the sum of the first, the shared rank 1 + the sum
of the second (as ``regions.core.reads.merged_context`` does for one player).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from regions.core.boards import Board
from regions.core.reads import RankedEntry, entry_of


@dataclass(frozen=True, slots=True)
class Found:
    """A player as its own shard answered: 0-based rank there, its row (with its metadata), and
    the entries of that shard with a strictly better score."""

    rank: int
    member: str
    score: str
    version: str
    above: int
    metadata: str | None = None


@dataclass(frozen=True, slots=True)
class Listed:
    """A player of the list: ``rank_among`` 1..n among the listed players with a score (in rank
    order); ``entry`` None when the player has no score."""

    user_id: str
    rank_among: int | None
    entry: RankedEntry | None


def distinct(user_ids: Iterable[str]) -> list[str]:
    """Each id once, in the order first given."""
    return list(dict.fromkeys(user_ids))


def ranked(board: Board, found: Found, counts: Sequence[tuple[int, int]], count: int) -> RankedEntry:
    """The player's entry on the whole board from its own shard's answer and every other shard's
    (better, strictly better) ``counts`` at its (score, member); ``count``: the board's size."""
    rank = found.rank + sum(better for better, _ in counts) + 1
    shared = found.above + sum(above for _, above in counts) + 1
    return entry_of(board, rank, (found.member, found.score, found.version, found.metadata), shared, count)


def listed(user_ids: Sequence[str], entries: Mapping[str, RankedEntry]) -> list[Listed]:
    """The players in rank order, numbered among themselves; those without a score last, in the
    order given."""
    scored = sorted((entries[u] for u in user_ids if u in entries), key=lambda e: e.rank)
    return [
        *(Listed(e.user_id, i, e) for i, e in enumerate(scored, start=1)),
        *(Listed(u, None, None) for u in user_ids if u not in entries),
    ]
