"""Keep-latest boards (``Aggregation.LATEST``): the award that happened last holds the score.

Pure: no I/O, no clock. "Latest" is an order over awards, never their arrival: by event time (the
award's ``occurredAt``, else the acceptance time of its winning copy), then event id. So an older
award that arrives later, a replay, or another region's copy never overrides a newer one, and every
region that read the same copies holds the same score.

Rules kept here (and property-tested against a reference model):
- the total is the score of the latest award; its tie order key (``reached``) is that award's own
  (``regions.core.ordering.reached_key``: its winning copy's acceptance time, then its event id), so
  equal scores rank by the board's tie policy whatever the arrival order;
- a player keeps the ``KEPT_LATEST`` latest awards as contributions ``(latest key, score)``, so when
  a winning copy replaces an applied one (another acceptance time, or another payload) the latest is
  recomputed exactly, unless more of the kept awards than that are each replaced by an older copy;
- awards accepted before the dedupe memory's completeness bound can no longer be replaced: of those
  only the latest is kept, and nothing older than it.

The dedupe, copy and version rules are ``regions.core.aggregation``'s; this module only says which
award holds the score.
"""

from __future__ import annotations

from regions.core.ordering import REACHED_WIDTH, reached_key
from schema.records import AwardEvent

Contribution = tuple[str, int]  # (latest key of an award, its score)
KEPT_LATEST = 16
"""The latest awards a LATEST player keeps that a winning copy may still replace."""
_TIME_SHIFT = 1 << 47
"""Added to event times before they are written as 12 hex digits, so that times before 1970 (an
``occurredAt`` may be any RFC 3339 time) still sort as numbers do."""
_TIME = slice(0, 12)
_EVENT = slice(12, 28)
_ACCEPTED = slice(28, 39)


def latest_key(event_at_ms: int, accepted_at_ms: int, event_id: str) -> str:
    """A sortable, fixed-width key of an award on a LATEST board: its event time, the first 64 bits
    of its event id (sorting the keys sorts by latest), then its acceptance time (for its tie key)."""
    return f"{event_at_ms + _TIME_SHIFT:012x}{event_id[:16]}{accepted_at_ms:011x}"


def contribution(award: AwardEvent) -> Contribution:
    """(latest key, score) of an award, as the copy ``award`` (the winner so far) was accepted."""
    return latest_key(award.event_at_ms, award.accepted_at_ms, award.event_id), award.amount


def reached_of(key: str) -> str:
    """The tie order key (``reached_key``) of the award a latest key names."""
    return key[_ACCEPTED] + key[_EVENT]


def _normal(key: str) -> str:
    """A latest key; a tie order key (a state kept with none: its holder's) is read as one whose
    event time is its acceptance time."""
    if len(key) != REACHED_WIDTH:
        return key
    at_ms = int(key[:11], 16)
    return latest_key(at_ms, at_ms, key[11:])


def latest_of(entries: tuple[Contribution, ...]) -> tuple[int, str]:
    """(score, tie order key) of the latest of a player's contributions (at least one)."""
    key, score = max(entries)
    return score, reached_of(key)


def kept(entries: tuple[Contribution, ...], complete_since_ms: int | None) -> tuple[Contribution, ...]:
    """The contributions worth keeping, oldest first: the ``KEPT_LATEST`` latest, none older than the
    latest of those accepted before ``complete_since_ms`` (no other copy of them can count any more)."""
    entries = tuple(sorted((_normal(k), a) for k, a in entries))
    if complete_since_ms is not None:
        final = [e for e in entries if int(e[0][_ACCEPTED], 16) < complete_since_ms]
        if final:
            entries = tuple(e for e in entries if e >= final[-1])
    return entries[-KEPT_LATEST:]


def added(
    entries: tuple[Contribution, ...], mine: Contribution, complete_since_ms: int | None
) -> tuple[int, str, tuple[Contribution, ...]]:
    """(total, tie order key, contributions) once the award ``mine`` is applied."""
    entries = kept((*entries, mine), complete_since_ms)
    return (*latest_of(entries), entries)


def replaced(
    entries: tuple[Contribution, ...], event_id: str, lost_at_ms: int, mine: Contribution,
    complete_since_ms: int | None,
) -> tuple[int, str, tuple[Contribution, ...]]:  # fmt: skip
    """(total, tie order key, contributions) once ``mine``, a winning copy of ``event_id``, replaces
    the copy accepted at ``lost_at_ms`` (its contribution, when it is still kept)."""
    lost = reached_key(lost_at_ms, event_id)
    others = tuple(e for e in entries if reached_of(_normal(e[0])) != lost)
    return added(others, mine, complete_since_ms)
