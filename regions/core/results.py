"""Archived results of closed boards: ranked entries in fixed-size chunks, and pages of them.
Pure: no I/O, no clock.

Rules kept here (and property-tested):
- a result lists every player once, in the board's rank order (``regions.core.ordering.rank_key``);
  chunk ``i`` holds ranks ``i*size+1 .. (i+1)*size``, so where a rank lives follows from the rank.
- an approximate (trending) board's result is its final chart: the best k candidates as ``top(k)``
  showed them at the archive, each with its estimate as the score and its verified count (if any)
  kept apart from metadata; the result carries the error bound of the estimates then (epsilon x
  the board's counted total). The candidates past k are not archived: the board ranks only its
  best k, and which candidates a partition keeps past them depends on the order it read the awards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from regions.core.approximate import ApproximateSpec
from regions.core.boards import Board, TiePolicy
from regions.core.candidates import Shown, noted_exact, shown
from regions.core.ordering import REACHED_WIDTH
from regions.core.reads import Row, entry_of


@dataclass(frozen=True, slots=True)
class ResultEntry:
    """One ranked player of a result; ``reached`` is the tie order key ("" on a USER_ID board)."""

    user_id: str
    score: int
    version: int
    reached: str = ""
    metadata: str = ""  # of the award that held the score (JSON text); empty: none
    # of an estimated result: the candidate's verified count at the archive (None: not verified)
    verified_count: int | None = None

    def shown(self, *, estimated: bool) -> Shown:
        """What the entry shows of a result that holds estimates (``estimated``) or exact scores."""
        return shown(self.score, self.metadata, estimated=estimated, verified_count=self.verified_count)


def archived_entry(board: Board, rank: int, row: Row) -> ResultEntry:
    """A projection row of ``board`` as the entry of its result at ``rank``: an approximate board's
    candidate keeps its verified count (beside it in the projection) apart from metadata.
    ``BrokenProjection`` when the row has no version record."""
    entry = entry_of(board, rank, row)
    reached = row[0][:REACHED_WIDTH] if board.tie_policy is TiePolicy.FIRST_REACHED else ""
    if board.approximate is None:
        return ResultEntry(entry.user_id, entry.score, entry.version, reached, entry.metadata or "")
    return ResultEntry(entry.user_id, entry.score, entry.version, reached,
                       verified_count=noted_exact(entry.metadata))  # fmt: skip


def archived_count(candidates: int, spec: ApproximateSpec | None) -> int:
    """The entries of a board's result when its projection ranks ``candidates``: all of an exact
    board's players, an approximate board's best k."""
    return candidates if spec is None else min(candidates, spec.k)


def holds_estimates(error_bound: int | None, approximate: bool) -> bool:
    """Whether a result's scores are estimates: it was archived with an error bound, or (archived
    before results kept one) its board is ``approximate``."""
    return error_bound is not None or approximate


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


def page_shared_ranks(found: Sequence[tuple[int, ResultEntry]], start: int) -> list[int]:
    """The competition ranks of a page's (rank, entry), ``start`` its first entry's: an entry shares
    the rank of the one before when their scores are equal, else every entry before it is better."""
    ranks: list[int] = []
    for i, (rank, entry) in enumerate(found):
        if i == 0:
            ranks.append(start)
        else:
            ranks.append(ranks[-1] if entry.score == found[i - 1][1].score else rank)
    return ranks


class TieStart:
    """Where the tie of the entry at ``rank`` (of ``score``) starts, the first rank of that score,
    which is its competition rank: found from a few chunks, never the whole result.

    The entries of a score are contiguous, so the chunk where they start is searched between the
    first chunk and the rank's own: the last chunk of the range is read first, twice (a tie seldom
    crosses a chunk), then the range is halved. ``probe`` names the next chunk to read (None: found),
    ``seen`` takes its entries."""

    def __init__(self, rank: int, score: int, size: int) -> None:
        self._score, self._size = score, size
        self._lo, self._hi = 0, (rank - 1) // size
        self._start = rank  # the best start known: the first entry of a chunk, else the rank itself
        self._probes = 0
        self._found = False

    def probe(self) -> int | None:
        if self._found or self._lo > self._hi:
            return None
        return self._hi if self._probes < 2 else (self._lo + self._hi) // 2

    def seen(self, number: int, entries: Sequence[ResultEntry]) -> None:
        self._probes += 1
        tied = [i for i, e in enumerate(entries) if e.score == self._score]
        if not tied:  # the tie starts after this chunk
            self._lo = number + 1
        elif tied[0] > 0 or number == 0:  # ... in it
            self._start, self._found = number * self._size + tied[0] + 1, True
        else:  # ... at its first entry or before it
            self._start, self._hi = number * self._size + 1, number - 1

    @property
    def start(self) -> int:
        return self._start
