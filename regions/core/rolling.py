"""A player's total on a ROLLING board: day buckets, folded over the days still in the window.

Pure: no I/O, no clock. A day is a local day's ordinal (``regions.core.periods.day_of``); which
days have left the window is told from outside (the home region's expiry records), never read
from a clock, so a replay always rebuilds the same state.

Rules kept here (and property-tested against a reference model):
- a bucket holds the fold of the player's awards of one day (SUM: their sum; MAX/MIN: the best)
  with its tie order key (LATEST: the latest with its latest key, ``regions.core.latest``, so the
  latest award within the window holds the score); the total is the fold of the buckets, so it
  depends only on the set of applied awards of the days in the window, never on their order or on
  when days expired;
- an award of a day that has left the window is never applied (``TooLate``);
- expiring days changes a player only when it had points in them: then the version grows by one
  and, with no bucket left, the player leaves the board (``removed``);
- versions keep growing across a removal, so a later total is newer than the removal;
- the metadata shown is that of the award the total is reached with, while it is the newest of
  its day or the state's tie order award (the rolling state keeps no other contributions: once
  expiry moves the tie order to an older day, its award's metadata is no longer known, so none).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from regions.core import latest
from regions.core.aggregation import (
    Applied,
    DedupeMemory,
    Outcome,
    OutOfRange,
    PlayerState,
    Seen,
    copy_of,
    fold,
    reached_after,
    repeat_outcome,
    with_metadata,
)
from regions.core.boards import Aggregation
from regions.core.ordering import reached_key
from regions.core.validation import MAX_EXACT
from schema.records import AwardEvent

Bucket = tuple[int, int, str]  # (day ordinal, the day's fold, its tie order key)


@dataclass(frozen=True, slots=True)
class TooLate:
    """The award's day has left the window: it is never applied."""

    event_id: str
    day: int
    expired_through: int


def _combine(aggregation: Aggregation, a: tuple[int, str] | None, amount: int, key: str) -> tuple[int, str]:
    """(fold, tie order key) of ``a`` with one more amount reached by ``key``: the same rule as a
    whole total (``regions.core.aggregation``), applied to a part of it."""
    if aggregation is Aggregation.LATEST:  # keys are latest keys: the later one holds the score
        return (amount, key) if a is None or key > a[1] else a
    state = None if a is None else PlayerState(a[0], 0, a[1])
    total = fold(aggregation, None if a is None else a[0], amount)
    return total, reached_after(aggregation, state, total, amount, key)


def total_of(aggregation: Aggregation, buckets: tuple[Bucket, ...]) -> tuple[int, str] | None:
    """(total, tie order key) of the buckets; None when there are none."""
    found: tuple[int, str] | None = None
    for _, amount, key in sorted(buckets):
        found = _combine(aggregation, found, amount, key)
    if found is not None and aggregation is Aggregation.LATEST:
        return found[0], latest.reached_of(found[1])
    return found


def _added(
    aggregation: Aggregation, buckets: tuple[Bucket, ...], day: int, amount: int, key: str
) -> tuple[Bucket, ...]:
    others = tuple(b for b in buckets if b[0] != day)
    mine = next(((b[1], b[2]) for b in buckets if b[0] == day), None)
    return tuple(sorted((*others, (day, *_combine(aggregation, mine, amount, key)))))


def apply_rolling(
    state: PlayerState | None,
    seen: Seen | None,
    award: AwardEvent,
    memory: DedupeMemory,
    *,
    day: int,
    expired_through: int | None,
) -> Outcome | TooLate:
    """Apply one award of ``day`` to a player's day buckets (``state.buckets``)."""
    repeat = repeat_outcome(award, seen, memory)
    if repeat is not None:
        return repeat
    if expired_through is not None and day <= expired_through:
        return TooLate(award.event_id, day, expired_through)
    aggregation = Aggregation(award.aggregation)
    key = (latest.contribution(award)[0] if aggregation is Aggregation.LATEST
           else reached_key(award.accepted_at_ms, award.event_id))  # fmt: skip
    buckets = _added(aggregation, () if state is None else state.buckets, day, award.amount, key)
    total, reached = total_of(aggregation, buckets) or (0, "")
    if not -MAX_EXACT < total < MAX_EXACT or any(not -MAX_EXACT < b[1] < MAX_EXACT for b in buckets):
        return OutOfRange(award.event_id, total)
    version = 1 if state is None else state.version + 1
    added = (reached_key(award.accepted_at_ms, award.event_id), award.metadata)
    notes = () if state is None else state.notes
    return Applied(with_metadata(PlayerState(total, version, reached, buckets), notes, aggregation, added),
                   copy_of(award))  # fmt: skip


def expire(aggregation: Aggregation, state: PlayerState, expired_through: int) -> PlayerState | None:
    """The player once every day up to ``expired_through`` has left the window; None when that
    changes nothing. A player left without buckets is ``removed`` (total 0, no tie key)."""
    kept = tuple(b for b in state.buckets if b[0] > expired_through)
    if kept == state.buckets:
        return None
    total, reached = total_of(aggregation, kept) or (0, "")
    changed = replace(state, total=total, version=state.version + 1, reached=reached, buckets=kept)
    return with_metadata(changed, state.notes, aggregation)


def removed(state: PlayerState) -> bool:
    """A rolling player with no points left in the window: not on the board."""
    return not state.buckets
