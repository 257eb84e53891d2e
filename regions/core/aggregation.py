"""Turning awards into versioned absolute totals, exactly once within the dedupe horizon.

Pure: no I/O, no clock. The time an award is judged by is its own acceptance time, so replaying the
same log always yields the same states, versions and outcomes.

Invariants kept here (and property-tested):
- a repeat of an event id whose acceptance time is within the horizon of the remembered copy never
  counts twice, however many other awards the player had in between: the dedupe memory is kept per
  event id, not per player;
- copies of one event id (a retry sent to another region) resolve to one winner, the same in every
  region whatever the arrival order: the earliest (acceptance time, accepting region, digest). A
  region that applied a copy that turns out to lose replaces it with the winner (a new version);
  a losing copy with another payload is refused (Conflict) in every region;
- versions are contiguous per (board, player): each change of state adds exactly one;
- totals stay exact integers with |total| < 2^53, otherwise the award is refused (OutOfRange);
- the total and its tie order (``reached``) depend only on the set of copies read, never on the
  order they arrived in: a SUM total is the sum of the winners, reached with the newest winner (by
  acceptance time, then event id); a MAX or MIN total is the best of the winners, reached with the
  oldest winner that holds it; a LATEST total is the score of the latest winner (by event time,
  then event id: ``regions.core.latest``), reached with that winner. A later copy that loses
  changes nothing at all;
- an award that might repeat one the memory has already forgotten is never applied (Forgotten);
- a state shows the metadata of the award that holds its total (``regions.core.metadata``), kept
  with the metadata of its kept contributions, so a winning copy that replaces one still finds it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from regions.core import latest
from regions.core.boards import Aggregation
from regions.core.metadata import Note, noted
from regions.core.ordering import reached_key
from regions.core.validation import MAX_EXACT
from schema.records import AwardEvent

Contribution = tuple[str, int]  # (tie order key of an award, its amount)
KEPT_CONTRIBUTIONS = 16
"""The best scores a MAX/MIN player keeps that a winning copy may still replace: the best is
recomputed exactly unless more of them than this are each replaced by a worse copy."""
KEPT_NEWEST = 4
"""The newest awards a SUM player keeps: its tie order is recomputed exactly when a winning copy
replaces the newest while fewer than this many of its kept awards have each been replaced by an
earlier copy (one accepted in another region before it); beyond that, regions may keep different
tie orders for the same total (the total itself stays exact)."""


@dataclass(frozen=True, slots=True)
class PlayerState:
    total: int
    version: int
    reached: str  # regions.core.ordering.reached_key of the award that reached the total
    # ROLLING boards only: (day, the day's fold, its tie order key), oldest first (regions.core.rolling)
    buckets: tuple[tuple[int, int, str], ...] = ()
    # The awards the tie order (SUM: the newest) or the best (MAX, MIN: the best scores, and the best
    # of those no copy can replace any more) is recomputed from when a winning copy replaces one.
    # LATEST: the latest awards, by ``regions.core.latest.latest_key``.
    contributions: tuple[Contribution, ...] = ()
    # The metadata of the award that holds the total (canonical JSON text, empty: none), and the
    # (tie key, metadata) of those of ``contributions`` that have some (regions.core.metadata.noted)
    metadata: str = ""
    notes: tuple[Note, ...] = ()


@dataclass(frozen=True, slots=True)
class Seen:
    """The remembered copy of an event id (the winner so far): its payload digest, acceptance time,
    accepting region and amount (None in memory written before amounts were kept)."""

    digest: str
    at_ms: int
    region: str = ""
    amount: int | None = None


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
class Replaced:
    """Another copy of a remembered event id won: its amount and tie order key replace those of the
    copy applied before (``seen`` is the winner). ``refused`` is that earlier-applied copy when its
    payload differs: it goes to reconciliation, as the losing copy does in every other region."""

    state: PlayerState
    seen: Seen
    refused: Seen | None


@dataclass(frozen=True, slots=True)
class Duplicate:
    event_id: str


@dataclass(frozen=True, slots=True)
class Conflict:
    """A copy with another payload that loses to the remembered one: it changes nothing."""

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


Outcome = Applied | Replaced | Duplicate | Conflict | OutOfRange | Forgotten


def fold(aggregation: Aggregation, current: int | None, amount: int) -> int:
    """The new total after one award (``current`` is None for a player's first award). Not LATEST's:
    which award holds its score depends on their order, not on their amounts (``regions.core.latest``)."""
    if aggregation is Aggregation.LATEST:
        raise ValueError("a LATEST total is not a fold of amounts: see regions.core.latest")
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


def copy_order(seen: Seen) -> tuple[int, str, str]:
    """Copies of one event id sort by this key; the first one wins, in every region alike."""
    return (seen.at_ms, seen.region, seen.digest)


def copy_of(award: AwardEvent) -> Seen:
    return Seen(award.digest, award.accepted_at_ms, award.region, award.amount)


def repeat_of(
    event_id: str, digest: str, at_ms: int, seen: Seen | None, memory: DedupeMemory
) -> Duplicate | Conflict | Forgotten | None:
    """Duplicate, Conflict or Forgotten when event ``event_id`` (payload ``digest``, judged at
    ``at_ms``) may repeat a copy within the horizon; else None. The remembered copy stays."""
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
    state: PlayerState | None, seen: Seen | None, award: AwardEvent, memory: DedupeMemory,
    *, same_state: bool = True,
) -> Outcome:  # fmt: skip
    """Apply one award to a player's state, given the remembered copy of its event id (if any).
    ``award`` may be another copy of the remembered one: then the copies' winner decides. Without
    ``same_state`` (a board with periods, where a copy with another payload may have another event
    time, so another period's state), only an identical copy may replace the remembered one."""
    repeat = repeat_outcome(award, seen, memory)
    another = isinstance(repeat, Duplicate) or (isinstance(repeat, Conflict) and same_state)
    if another and seen is not None and state is not None:
        return _another_copy(state, seen, award, memory)
    if repeat is not None:
        return repeat
    aggregation = Aggregation(award.aggregation)
    if aggregation is Aggregation.LATEST:
        latest_one = latest.contribution(award)
        total, reached, entries = latest.added(contributions_of(state), latest_one, memory.complete_since_ms)
        return _checked(award, state, total, reached, entries, (latest_one[0], award.metadata))
    mine = (reached_key(award.accepted_at_ms, award.event_id), award.amount)
    entries = _kept(aggregation, (*contributions_of(state), mine), memory)
    if aggregation is Aggregation.SUM:
        total = award.amount if state is None else state.total + award.amount
        reached = max(k for k, _ in entries)
    else:
        total, reached = best_of(aggregation, entries)
    return _checked(award, state, total, reached, entries, (mine[0], award.metadata))


def _checked(
    award: AwardEvent, state: PlayerState | None, total: int, reached: str,
    entries: tuple[Contribution, ...], added: Note,
) -> Applied | OutOfRange:  # fmt: skip
    if not -MAX_EXACT < total < MAX_EXACT:
        return OutOfRange(award.event_id, total)
    version = 1 if state is None else state.version + 1
    changed = PlayerState(total, version, reached, contributions=entries)
    notes = () if state is None else state.notes
    return Applied(with_metadata(changed, notes, Aggregation(award.aggregation), added), copy_of(award))


def contributions_of(state: PlayerState | None) -> tuple[Contribution, ...]:
    """A player's contributions; in a state kept before they were, its tie order's award is one."""
    if state is None:
        return ()
    return state.contributions or ((state.reached, state.total),)


def best_of(aggregation: Aggregation, entries: tuple[Contribution, ...]) -> tuple[int, str]:
    """(best score, the oldest key that holds it) of a MAX/MIN player's contributions."""
    best = max(a for _, a in entries) if aggregation is Aggregation.MAX else min(a for _, a in entries)
    return best, min(k for k, a in entries if a == best)


def _better(aggregation: Aggregation, a: int, b: int) -> bool:
    return a > b if aggregation is Aggregation.MAX else a < b


def _kept(
    aggregation: Aggregation, entries: tuple[Contribution, ...], memory: DedupeMemory
) -> tuple[Contribution, ...]:
    """The contributions worth keeping. SUM: the ``KEPT_NEWEST`` newest. MAX/MIN: of those accepted
    before the memory's completeness bound (no other copy of them can count any more) only the best,
    and of the others the ``KEPT_CONTRIBUTIONS`` best that beat it."""
    if aggregation is Aggregation.SUM:
        return tuple(sorted(entries)[-KEPT_NEWEST:])
    since = memory.complete_since_ms
    final = [e for e in entries if since is not None and int(e[0][:11], 16) < since]
    live = [e for e in entries if e not in final]
    settled: list[Contribution] = []
    if final:
        best, key = best_of(aggregation, tuple(final))
        settled = [(key, best)]
        live = [e for e in live if _better(aggregation, e[1], best)]
    sign = -1 if aggregation is Aggregation.MAX else 1
    live = sorted(live, key=lambda e: (sign * e[1], e[0]))[:KEPT_CONTRIBUTIONS]
    return tuple(sorted((*settled, *live)))


def _another_copy(state: PlayerState, seen: Seen, award: AwardEvent, memory: DedupeMemory) -> Outcome:
    """``award`` is another copy of the remembered ``seen`` within the horizon. A copy that loses
    changes nothing; one that wins replaces the remembered copy's amount and tie order key."""
    copy = copy_of(award)
    conflict = copy.digest != seen.digest
    # (memory kept before amounts were: its first copy stays the winner)
    if copy_order(copy) >= copy_order(seen) or seen.amount is None:
        return Conflict(award.event_id, seen.digest, copy.digest) if conflict else Duplicate(award.event_id)
    aggregation = Aggregation(award.aggregation)
    replaced = reached_key(seen.at_ms, award.event_id)
    kept = contributions_of(state)
    others = tuple(e for e in kept if e[0] != replaced)
    mine = (reached_key(copy.at_ms, award.event_id), award.amount)
    if aggregation is Aggregation.LATEST:
        mine = latest.contribution(award)
        total, reached, entries = latest.replaced(kept, award.event_id, seen.at_ms, mine,
                                                  memory.complete_since_ms)  # fmt: skip
    elif aggregation is Aggregation.SUM:
        total = state.total - seen.amount + award.amount
        # An award older than the newest kept is not the newest, nor is an earlier copy of it.
        entries = _kept(aggregation, (*others, mine), memory) if len(others) < len(kept) else kept
        reached = max(k for k, _ in entries)
    else:
        entries = _kept(aggregation, (*others, mine), memory)
        total, reached = best_of(aggregation, entries)
    if not -MAX_EXACT < total < MAX_EXACT:
        return OutOfRange(award.event_id, total)
    changed = PlayerState(total, state.version + 1, reached, state.buckets, entries)
    # The replaced copy's metadata goes (the winner's key may be the same: same time, other region).
    notes = tuple(note for note in state.notes if _award_of(aggregation, note[0]) != replaced)
    changed = with_metadata(changed, notes, aggregation, (mine[0], award.metadata))
    return Replaced(changed, copy, seen if conflict else None)


def _award_of(aggregation: Aggregation, key: str) -> str:
    """The tie order key of the award a contribution's key names."""
    return latest.reached_of(key) if aggregation is Aggregation.LATEST else key


def with_metadata(
    state: PlayerState, notes: tuple[Note, ...], aggregation: Aggregation, added: Note | None = None
) -> PlayerState:
    """``state``, a player's new state (after the award ``added`` names by its contribution's key,
    with its metadata), with the metadata of the award that holds its total and the notes of its
    kept contributions: ``notes`` (the state's before) and ``added``, of those still kept."""
    kept = (key for key, _ in contributions_of(state))
    metadata, kept_notes = noted(aggregation, state.reached, kept, notes, added)
    return replace(state, metadata=metadata, notes=kept_notes)
