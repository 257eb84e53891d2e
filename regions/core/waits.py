"""Waiting for the projection: ``POST /internal/awards?wait=applied&timeoutMs=N``.

Pure rules: the query's parsing (every bad parameter named with its rule), when this region's
projection covers an award, and whether the award changed the player's entry.

An award acknowledged by the region r at (partition p, offset o) is covered by a projection whose
positions (not stale) hold ``positions[(r, p)] >= o``: every award at or before a position is
applied (``regions.core.reads.AsOf``), so a read after it shows the award's effect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from regions.core.positions import SourceKey
from regions.core.reads import AsOf, RankedEntry
from regions.core.validation import FieldError, Invalid

WAIT_APPLIED = "applied"
MAX_TIMEOUT_MS = 2000  # the longest a request holds its answer for the projection
WAIT_PARAMETERS = ("wait", "timeoutMs")


@dataclass(frozen=True, slots=True)
class AppliedWait:
    """Answer once this region's projection covers each accepted award, waiting at most ``timeout_ms``
    for the projection in all (its read before the awards are produced and the wait after Kafka's
    acknowledgement together)."""

    timeout_ms: int


def parse_wait(query: Sequence[tuple[str, str]]) -> AppliedWait | Invalid | None:
    """The wait a request's query asks for: None without ``wait`` (the plain path), or the errors,
    each naming its parameter. ``timeoutMs`` (1..``MAX_TIMEOUT_MS``) defaults to the most. Other
    parameters are left alone (the intake takes no others)."""
    given: dict[str, list[str]] = {}
    for name, value in query:
        if name in WAIT_PARAMETERS:
            given.setdefault(name, []).append(value)
    errors = [
        FieldError(name, "must be given at most once") for name, values in given.items() if len(values) > 1
    ]
    wait, timeout = given.get("wait", [None])[0], given.get("timeoutMs", [None])[0]
    if wait is not None and wait != WAIT_APPLIED:
        errors.append(FieldError("wait", f"must be {WAIT_APPLIED!r}"))
    timeout_ms = MAX_TIMEOUT_MS
    if timeout is not None:
        if wait is None:
            errors.append(FieldError("timeoutMs", f"is taken only with wait={WAIT_APPLIED}"))
        elif _milliseconds(timeout) is None:
            errors.append(FieldError("timeoutMs", f"must be an integer of milliseconds, 1..{MAX_TIMEOUT_MS}"))
        else:
            timeout_ms = int(timeout)
    if errors:
        return Invalid(tuple(errors))
    return None if wait is None else AppliedWait(timeout_ms)


def _milliseconds(text: str) -> int | None:
    """``text`` as a timeout in 1..MAX_TIMEOUT_MS, or None (digits only: no sign, space or exponent)."""
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(MAX_TIMEOUT_MS)):
        return None
    return int(text) if 1 <= int(text) <= MAX_TIMEOUT_MS else None


def covers(as_of: AsOf, key: SourceKey, offset: int) -> bool:
    """Whether a read with ``as_of`` shows the award acknowledged at ``offset`` of ``key`` (the
    accepting region and partition). A stale read (the projection lost or rebuilding) covers nothing."""
    return not as_of.stale and covered(as_of.positions, key, offset)


def covered(positions: Mapping[SourceKey, int], key: SourceKey, offset: int) -> bool:
    return covered_through(positions, key) >= offset


def covered_through(positions: Mapping[SourceKey, int], key: SourceKey) -> int:
    """The last offset of ``key`` that ``positions`` cover (-1: none yet)."""
    return positions.get(key, -1)


def changed(before: RankedEntry | None, after: RankedEntry) -> bool:
    """Whether the player's entry changed between the read before the award was produced
    (``before``, None: no score then) and the read once the projection covers it (``after``).

    Changed when the player had no score before, or when both the version and the score moved. A
    best-of (MAX, MIN) award that does not beat the player's best still steps the version but leaves
    the score: not changed; a repeat of an award (counted once) moves neither. The rule sees the
    entry, not the award: anything else that moved the same player's entry in between (an award
    for them accepted earlier and projected meanwhile, a concurrent one, a rolling window's expiry)
    counts as a change too."""
    if before is None:
        return True
    return after.version != before.version and after.score != before.score


@dataclass(frozen=True, slots=True)
class Applied:
    """What an award's answer says once the projection covers it (``applied`` in the answer)."""

    score: int
    rank: int  # ordinal, as every read's
    shared_rank: int  # 1 + the players with a strictly better score
    changed: bool

    def encoded(self) -> dict[str, object]:
        return {
            "score": self.score,
            "rank": self.rank,
            "sharedRank": self.shared_rank,
            "changed": self.changed,
        }


def applied_of(before: RankedEntry | None, after: RankedEntry | None) -> Applied | None:
    """The answer's ``applied`` from the entries before and after (``after`` None: the covering
    projection holds no score for the player, the award was not applied, see ``reconciliation``)."""
    if after is None:
        return None
    return Applied(after.score, after.rank, after.shared_rank, changed(before, after))
