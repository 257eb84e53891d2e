"""Turning awards into versioned absolute totals, exactly once within the dedupe horizon.

Pure: no I/O, no clock. The time an award is judged by is its own acceptance time, so replaying the
same log always yields the same states, versions and outcomes.

Invariants kept here (and property-tested):
- a repeat of an event id inside the horizon changes nothing (identical: Duplicate; different
  payload: Conflict);
- versions are contiguous per (board, player): each applied award adds exactly one;
- totals stay exact integers with |total| < 2^53, otherwise the award is refused (OutOfRange).
"""

from __future__ import annotations

from dataclasses import dataclass

from regions.core.boards import Aggregation
from regions.core.validation import MAX_EXACT
from schema.records import SEEN_BYTES, AwardEvent, pack_seen, seen_at_ms


@dataclass(frozen=True, slots=True)
class DedupePolicy:
    """Dedupe memory per (board, player): events younger than ``horizon_ms``, at most ``max_recent``."""

    horizon_ms: int
    max_recent: int


@dataclass(frozen=True, slots=True)
class PlayerState:
    total: int
    version: int
    reached: str
    recent: bytes  # packed dedupe memory, oldest first (schema.records.pack_seen)


@dataclass(frozen=True, slots=True)
class Applied:
    state: PlayerState


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


Outcome = Applied | Duplicate | Conflict | OutOfRange


def fold(aggregation: Aggregation, current: int | None, amount: int) -> int:
    """The new total after one award (``current`` is None for a player's first award)."""
    if current is None:
        return amount
    if aggregation is Aggregation.SUM:
        return current + amount
    if aggregation is Aggregation.MAX:
        return max(current, amount)
    return min(current, amount)


def _remember(recent: bytes, seen: bytes, at_ms: int, policy: DedupePolicy) -> bytes:
    """``seen`` appended; events older than the horizon and beyond ``max_recent`` forgotten."""
    oldest = at_ms - policy.horizon_ms
    kept = [
        recent[at : at + SEEN_BYTES]
        for at in range(0, len(recent), SEEN_BYTES)
        if seen_at_ms(recent, at) > oldest
    ]
    kept.append(seen)
    return b"".join(kept[-policy.max_recent :])


def apply_award(state: PlayerState | None, award: AwardEvent, reached: str, policy: DedupePolicy) -> Outcome:
    """Apply one award to a player's state. ``reached`` is the award's position in the log."""
    seen = pack_seen(award.event_id, award.digest, award.accepted_at_ms)
    if state is not None:
        recent = state.recent
        for at in range(0, len(recent), SEEN_BYTES):
            if (
                recent[at : at + 16] == seen[:16]
                and seen_at_ms(recent, at) > award.accepted_at_ms - policy.horizon_ms
            ):
                if recent[at + 16 : at + 24] == seen[16:24]:
                    return Duplicate(award.event_id)
                return Conflict(award.event_id, recent[at + 16 : at + 24].hex(), award.digest)
    current = None if state is None else state.total
    total = fold(Aggregation(award.aggregation), current, award.amount)
    if not -MAX_EXACT < total < MAX_EXACT:
        return OutOfRange(award.event_id, total)
    return Applied(
        PlayerState(
            total=total,
            version=1 if state is None else state.version + 1,
            reached=reached if state is None or total != state.total else state.reached,
            recent=_remember(b"" if state is None else state.recent, seen, award.accepted_at_ms, policy),
        )
    )
