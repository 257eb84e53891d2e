"""The checkers of a fault schedule's run (``tests.faults.runner``): pure functions over what the run
recorded and read back, each returning its anomalies (empty: the invariant held).

The oracle is the set of award copies the regions' awards topics hold (``Copy``: every accepted
copy, including those whose 202 never reached the client), checked first against the history: every
202 names a copy that is there (``lost``). The fold of those copies is what every region must show:
copies of one event id count once, the earliest (acceptedAt, region, digest) wins, and a losing copy
with another payload is in every region's reconciliation as ``conflicting_repeat``. Copies of one
event accepted further apart than the dedupe horizon are no repeat the product promises to merge:
such an event may count once per copy (or be reconciled as ``beyond_dedupe_memory``); its bounds
say so, and every region must still agree.

- ``lost``: every 202 names a copy in its region's awards topic (I1).
- ``exactly_once``: every region's totals equal the fold, and its reconciliation holds exactly the
  documented records (I1, I2, I6).
- ``agreement``: every region ranks every board identically, totals and ranks (I4, I6).
- ``as_of``: no read claimed an award it did not show, and no version went back (I5, I3; the
  checks of ``tests.faults.reads``).
- ``close``: every closed board's archive equals the fold of the copies before the recorded cutoffs,
  and the home region reconciled the later ones as ``late`` (I7).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from regions.core.boards import Board
from regions.core.ordering import rank_key
from tests.faults.reads import Acked, Answer, ReadHistory, check_covered, check_versions

CHECKERS = ("lost", "exactly_once", "agreement", "as_of", "close")
PlayerKey = tuple[str, str]  # (board, user)


@dataclass(frozen=True, slots=True)
class Copy:
    """One accepted copy of an award, as its region's awards topic holds it."""

    event_id: str
    digest: str
    board: str
    user: str
    match: str
    amount: int
    region: str
    accepted_at_ms: int
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class Attempt:
    """One request of the history: ``ok`` (202), ``fail`` (a definite refusal) or ``info`` (no
    answer, or a 5xx: it may have been accepted). ``acks``: (region, partition, offset, event id)."""

    index: int
    process: int
    kind: str
    region: str
    board: str
    awards: tuple[tuple[str, str, int], ...]  # (user, match, amount)
    invoked: float
    completed: float
    outcome: str
    status: int | None
    acks: tuple[tuple[str, int, int, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Refused:
    """A reconciliation record of an award: in ``region``'s reconciliation topic."""

    reason: str
    board: str
    event_id: str
    digest: str
    accepted_by: str


@dataclass(slots=True)
class Fold:
    """What every region must show for a set of boards."""

    bounds: dict[PlayerKey, tuple[int, int]] = field(default_factory=dict)
    losers: set[tuple[str, str]] = field(default_factory=set)  # (event id, digest) to reconcile
    winners: set[tuple[str, str]] = field(default_factory=set)
    loose: set[str] = field(default_factory=set)  # events with copies beyond the horizon


def winner(copies: Sequence[Copy]) -> Copy:
    """The copy of an event that counts: the earliest (acceptedAt, region, digest)."""
    return min(copies, key=lambda c: (c.accepted_at_ms, c.region, c.digest))


def by_event(copies: Iterable[Copy]) -> dict[str, list[Copy]]:
    found: dict[str, list[Copy]] = {}
    for c in copies:
        found.setdefault(c.event_id, []).append(c)
    return found


def fold(copies: Iterable[Copy], horizon_ms: int) -> Fold:
    """The bounds of every player's SUM total, and the copies reconciliation must name."""
    result = Fold()
    for event, same in by_event(copies).items():
        win = winner(same)
        key = (win.board, win.user)
        low, high = result.bounds.get(key, (0, 0))
        if max(c.accepted_at_ms for c in same) - win.accepted_at_ms <= horizon_ms:
            result.bounds[key] = (low + win.amount, high + win.amount)
            result.winners.add((event, win.digest))
            result.losers |= {(event, c.digest) for c in same if c.digest != win.digest}
        else:
            result.loose.add(event)
            result.bounds[key] = (low + min(c.amount for c in same), high + sum(c.amount for c in same))
    return result


def check_lost(attempts: Iterable[Attempt], copies: Iterable[Copy]) -> list[str]:
    """Every acknowledged award is a copy in its accepting region's awards topic, where the 202 said."""
    held = {(c.region, c.partition, c.offset): c.event_id for c in copies}
    problems = []
    for a in attempts:
        for region, partition, offset, event in a.acks:
            if held.get((region, partition, offset)) != event:
                problems.append(
                    f"request {a.index} ({a.kind} to {a.region}) was acknowledged at {region}:{partition}:"
                    f"{offset} as {event}, but that position holds {held.get((region, partition, offset))}"
                )
    return problems


def check_exactly_once(
    expected: Fold,
    totals: Mapping[str, Mapping[PlayerKey, int | None]],
    refused: Mapping[str, Sequence[Refused]] | None,
    boards: Iterable[str],
) -> list[str]:
    """Every region's total of every player lies within the fold's bounds (exact when no event
    straddles the horizon), and its reconciliation of ``boards`` holds every losing copy as
    ``conflicting_repeat``, never a winner, and nothing else but ``beyond_dedupe_memory`` of a
    loose event (``refused`` None: the totals only)."""
    problems, wanted = [], set(boards)
    for region, found in totals.items():
        for key in sorted(expected.bounds.keys() | found.keys()):
            low, high = expected.bounds.get(key, (0, 0))
            total = found.get(key) or 0
            if not low <= total <= high:
                what = "missing awards (I1)" if total < low else "an award counted twice (I2)"
                problems.append(f"{region}: {key[0]}/{key[1]} has {total}, the fold {low}..{high}: {what}")
        if refused is None:  # totals only (while draining)
            continue
        records = [r for r in refused.get(region, ()) if r.board in wanted]
        named = {(r.event_id, r.digest) for r in records if r.reason == "conflicting_repeat"}
        problems += [f"{region}: the losing copy {e}/{d} is not in reconciliation as conflicting_repeat"
                     for e, d in sorted(expected.losers - named)]  # fmt: skip
        for r in records:
            if r.reason == "conflicting_repeat" and (r.event_id, r.digest) in expected.winners:
                problems.append(f"{region}: the winning copy {r.event_id}/{r.digest} was refused")
            elif r.reason == "beyond_dedupe_memory" and r.event_id not in expected.loose:
                problems.append(
                    f"{region}: {r.event_id} reconciled as beyond_dedupe_memory within the horizon"
                )
            elif r.reason not in ("conflicting_repeat", "beyond_dedupe_memory"):
                problems.append(f"{region}: {r.board}/{r.event_id} in reconciliation as {r.reason}")
    return problems


Standing = tuple[int, str, int]  # rank, user, score


def check_agreement(standings: Mapping[str, Mapping[str, Sequence[Standing]]]) -> list[str]:
    """Every region ranks every board identically: the same players, totals and ranks."""
    problems = []
    regions = sorted(standings)
    first = regions[0]
    for region in regions[1:]:
        for board in sorted(standings[first].keys() | standings[region].keys()):
            mine, theirs = list(standings[first].get(board, ())), list(standings[region].get(board, ()))
            if mine != theirs:
                diff = [(a, b) for a, b in zip(mine, theirs, strict=False) if a != b][:3]
                problems.append(f"{board}: {first} ranks {len(mine)} players, {region} {len(theirs)}; "
                                f"first differences ({first}, {region}): {diff or 'lengths'}")  # fmt: skip
    return problems


def encode_position(regions: Sequence[str], partitions: int, region: str, partition: int) -> int:
    """(region, partition) as one int, so the one-region checks of ``tests.faults.reads`` apply."""
    return sorted(regions).index(region) * partitions + partition


def acked_once(attempts: Iterable[Attempt], copies: Iterable[Copy], regions: Sequence[str],
               partitions: int) -> dict[str, list[Acked]]:  # fmt: skip
    """By board, one acknowledged copy of every event whose amount is certain (a single payload
    accepted): what a read of that board covering that copy must show."""
    digests: dict[str, set[str]] = {}
    for c in copies:
        digests.setdefault(c.event_id, set()).add(c.digest)
    seen: set[str] = set()
    found: dict[str, list[Acked]] = {}
    for a in (a for a in attempts if a.acks):
        for (user, _, amount), (region, partition, offset, event) in zip(a.awards, a.acks, strict=True):
            if event in seen or len(digests.get(event, ())) != 1:
                continue
            seen.add(event)
            position = encode_position(regions, partitions, region, partition)
            found.setdefault(a.board, []).append(Acked(user, amount, position, offset))
    return found


def check_as_of(
    acked: Mapping[str, list[Acked]], answers: Mapping[str, list[Answer]], most: int = 1500
) -> list[str]:
    """I5 and I3 over the recorded reads (``tests.faults.reads``' checks), ``answers`` keyed by
    ``<region>:<board>``. Of a long run's reads ``most`` per key are checked, evenly spaced (the
    check is quadratic; the short profile checks every read)."""
    problems = []
    for key, found in sorted(answers.items()):
        step = max(1, -(-len(found) // most))
        history = ReadHistory(acked=acked.get(key.split(":", 1)[1], []), answers=found[::step])
        problems += [f"{key}: {p}" for p in check_covered(history) + check_versions(history)]
    return problems


def close_oracle(board: Board, copies: Iterable[Copy], cutoffs: Mapping[str, Mapping[int, int]]
                 ) -> tuple[list[tuple[str, int, int]], set[str]]:  # fmt: skip
    """(user, total, version) in rank order of the distinct awards before the cutoffs, and the
    events whose every copy lies after them (late)."""
    totals: dict[str, tuple[int, int]] = {}
    late = set()
    for event, same in by_event(c for c in copies if c.board == board.id).items():
        before = [c for c in same if c.offset < cutoffs.get(c.region, {}).get(c.partition, -1)]
        if not before:
            late.add(event)
            continue
        win = winner(before)
        total, version = totals.get(win.user, (0, 0))
        totals[win.user] = (total + win.amount, version + 1)
    ranked = sorted(
        totals.items(), key=lambda kv: rank_key(board.sort_order, board.tie_policy, kv[0], kv[1][0], "")
    )
    return [(user, total, version) for user, (total, version) in ranked], late


def check_close(
    board: Board,
    closed: bool,
    archive: Sequence[tuple[str, int, int]] | None,
    copies: Iterable[Copy],
    cutoffs: Mapping[str, Mapping[int, int]],
    late_reconciled: set[str],
    regions: Sequence[str],
    partitions: int,
) -> list[str]:
    """I7 for one board: CLOSED, a cutoff for every (region, partition), the archive equal to the
    fold of the copies before the cutoffs, and every later award reconciled as late at home."""
    if not closed or archive is None:
        return [f"{board.id}: not CLOSED with an archive after the drain"]
    missing = [f"{r}:{p}" for r in regions for p in range(partitions) if p not in cutoffs.get(r, {})]
    if missing:
        return [f"{board.id}: no cutoff recorded for {missing}"]
    expected, late = close_oracle(board, copies, cutoffs)
    problems = []
    if list(archive) != expected:
        wrong = [(a, e) for a, e in zip(archive, expected, strict=False) if a != e][:3]
        problems.append(f"{board.id}: archived {len(archive)} players, the fold before the cutoffs "
                        f"{len(expected)}; first differences (archived, fold): {wrong or 'lengths'}")  # fmt: skip
    if late - late_reconciled:
        problems.append(f"{board.id}: {len(late - late_reconciled)} late award(s) not reconciled as late, "
                        f"e.g. {sorted(late - late_reconciled)[0]}")  # fmt: skip
    return problems
