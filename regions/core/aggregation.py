"""Turning awards into versioned absolute totals, exactly once within the dedupe horizon.

Pure: no I/O, no clock. The time an award is judged by is its own acceptance time, so replaying the
same log always yields the same states, versions and outcomes.

Invariants kept here (and property-tested):
- a repeat of an event id whose acceptance time is within the horizon of the remembered copy changes
  nothing (identical payload: Duplicate; different payload: Conflict), however many other awards the
  player had in between: the dedupe memory is kept per event id, not per player;
- versions are contiguous per (board, player): each applied award adds exactly one;
- totals stay exact integers with |total| < 2^53, otherwise the award is refused (OutOfRange);
- the total and its tie order (``reached``) depend only on the set of applied awards, never on the
  order they arrived in: SUM reaches its total with the newest (acceptance time, event id) of its
  awards, MAX and MIN with the oldest of the awards that hold the best score;
- an award that might repeat one the memory has already forgotten is never applied (Forgotten).
"""

from __future__ import annotations

from dataclasses import dataclass

from regions.core.boards import Aggregation
from regions.core.ordering import reached_key
from regions.core.validation import MAX_EXACT
from schema.records import AwardEvent


@dataclass(frozen=True, slots=True)
class PlayerState:
    total: int
    version: int
    reached: str  # regions.core.ordering.reached_key of the award that reached the total
    # ROLLING boards only: (day, the day's fold, its tie order key), oldest first (regions.core.rolling)
    buckets: tuple[tuple[int, int, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Seen:
    """The remembered copy of an event id: its payload digest and acceptance time."""

    digest: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class DedupeMemory:
    """What the dedupe memory promises: ``horizon_ms`` around every remembered copy, and every copy
    accepted at or after ``complete_since_ms`` is still remembered (older ones may be forgotten)."""

    horizon_ms: int
    complete_since_ms: int | None = None  # None: nothing was ever forgotten


@dataclass(frozen=True, slots=True)
class Applied:
    state: PlayerState
    seen: Seen  # the copy to remember from now on


@dataclass(frozen=True, slots=True)
class Duplicate:
    event_id: str


@dataclass(frozen=True, slots=True)
class Conflict:
    event_id: str
    recorded_digest: str
    digest: str


@dataclass(frozen=True, slots=True)
class OutOfRange:
    event_id: str
    total: int


@dataclass(frozen=True, slots=True)
class Forgotten:
    """No copy is remembered, but one accepted within the horizon may have been forgotten."""

    event_id: str
    complete_since_ms: int


Outcome = Applied | Duplicate | Conflict | OutOfRange | Forgotten


def fold(aggregation: Aggregation, current: int | None, amount: int) -> int:
    """The new total after one award (``current`` is None for a player's first award)."""
    if current is None:
        return amount
    if aggregation is Aggregation.SUM:
        return current + amount
    if aggregation is Aggregation.MAX:
        return max(current, amount)
    return min(current, amount)


def reached_after(
    aggregation: Aggregation, state: PlayerState | None, total: int, amount: int, key: str
) -> str:
    """The tie order of ``total`` once an award with ``amount`` and reached key ``key`` is applied.

    Commutative by construction: SUM keeps the newest key, MAX/MIN the oldest key of the awards that
    hold the best score, so any permutation of the same awards reaches the same key."""
    if state is None:
        return key
    if aggregation is Aggregation.SUM:
        return max(state.reached, key)
    if amount != total:
        return state.reached  # the award does not hold the best score
    return key if total != state.total else min(state.reached, key)


def repeat_of(
    event_id: str, digest: str, at_ms: int, seen: Seen | None, memory: DedupeMemory
) -> Duplicate | Conflict | Forgotten | None:
    """Duplicate, Conflict or Forgotten when event ``event_id`` (payload ``digest``, judged at
    ``at_ms``) may repeat a copy within the horizon; else None."""
    if seen is not None and abs(at_ms - seen.at_ms) < memory.horizon_ms:
        if seen.digest == digest:
            return Duplicate(event_id)
        return Conflict(event_id, seen.digest, digest)
    since = memory.complete_since_ms
    if since is not None and at_ms - memory.horizon_ms < since:
        # A copy accepted up to a horizon earlier could be one the memory no longer holds.
        return Forgotten(event_id, since)
    return None


def repeat_outcome(award: AwardEvent, seen: Seen | None, memory: DedupeMemory) -> Outcome | None:
    """Duplicate, Conflict or Forgotten when ``award`` may repeat a copy within the horizon; else None."""
    return repeat_of(award.event_id, award.digest, award.accepted_at_ms, seen, memory)


def apply_award(
    state: PlayerState | None, seen: Seen | None, award: AwardEvent, memory: DedupeMemory
) -> Outcome:
    """Apply one award to a player's state, given the remembered copy of its event id (if any)."""
    repeat = repeat_outcome(award, seen, memory)
    if repeat is not None:
        return repeat
    aggregation = Aggregation(award.aggregation)
    current = None if state is None else state.total
    total = fold(aggregation, current, award.amount)
    if not -MAX_EXACT < total < MAX_EXACT:
        return OutOfRange(award.event_id, total)
    key = reached_key(award.accepted_at_ms, award.event_id)
    return Applied(
        PlayerState(
            total=total,
            version=1 if state is None else state.version + 1,
            reached=reached_after(aggregation, state, total, award.amount, key),
        ),
        Seen(award.digest, award.accepted_at_ms),
    )
