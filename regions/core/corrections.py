"""Corrections of a closed board's result, as pure rules. No I/O, no clock (times are arguments, in ms).

A correction gives some players of a CLOSED board a corrected final score and publishes the result
as the next version (n+1); earlier versions stay as they were. The rules kept here:

- **Input.** A correction names an id (the client's, 1..128 printable characters: the same id again
  is the same correction), a reason, and 1..``MAX_ADJUSTMENTS`` adjustments, one per player, each an
  exact score (|score| < 2^53). Every problem is reported with the field it concerns.
- **Idempotency.** A correction's content is its reason and its adjustments, in any order: the same id
  with the same content answers the first one's result version; with other content it is refused.
- **Versions.** Version 1 is the close's result; each correction takes the next version when it is
  recorded, and corrections of a board are published one after another, in version order.
- **Applying.** A processor task applies a correction record as a new versioned absolute total (the
  player's version plus one, the score, the tie order kept), deduplicated per (board, correction id,
  player) by the dedupe memory, and only once its partition holds the board's final fold: once it has
  met the cutoff of every region the board closed with (named in the record, so a region added since
  changes nothing). Records met before that are held, then applied in version order.
- **Publishing.** The home region archives version n+1 once its projection's positions reach every
  correction record it wrote and every adjusted player holds the corrected score; version n+1 is then
  version n with exactly the adjustments, ranked again.
- **Approximate boards take none.** A correction gives a player an exact final score; an approximate
  (trending) board's result holds estimates ordered by estimate, with one error bound for all: an
  exact score among them would be neither. Its result changes only by moderation (an item hidden or
  shown again) and erasure; a correction is refused naming the board's field.
- **Moderation.** Hiding a player of a CLOSED board (or showing them again) is a version with no
  adjustments that names the player (``moderated``): the moderation record, applied by every region,
  takes them out of (or back into) the projection, and the version is archived once the home
  projection's positions passed the record (where it landed is the version's ``written``): whatever
  the player's total, a player who never scored included, and whatever later actions did since.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from regions.core.aggregation import (
    Conflict,
    DedupeMemory,
    Duplicate,
    Forgotten,
    OutOfRange,
    PlayerState,
    Seen,
    repeat_of,
)
from regions.core.boards import Board
from regions.core.ids import text_error, user_id_error
from regions.core.lifecycle import MAX_REASON
from regions.core.validation import MAX_EXACT, FieldError
from schema.event_id import correction_digest, correction_event_id
from schema.lifecycle import CorrectionRecord

MAX_ADJUSTMENTS = 1000
MAX_CORRECTION_ID = 128
FIRST_RESULT_VERSION = 1  # the close's result


@dataclass(frozen=True, slots=True)
class Adjustment:
    user_id: str
    score: int  # the player's corrected final score


@dataclass(frozen=True, slots=True)
class CorrectionRequest:
    """A valid correction as asked for (not yet checked against the board)."""

    board_id: str
    correction_id: str
    reason: str
    adjustments: tuple[Adjustment, ...]
    # A moderation action's version: the players it hides (True) or shows again (False)
    moderated: tuple[tuple[str, bool], ...] = ()

    @property
    def digest(self) -> str:
        return content_digest(self.reason, self.adjustments)


def content_digest(reason: str, adjustments: Iterable[Adjustment]) -> str:
    """What makes two corrections with one id the same: the reason and the adjustments, in any order."""
    parts = [reason, *(f"{a.user_id}\x00{a.score}" for a in sorted(adjustments, key=lambda a: a.user_id))]
    framed = b"".join(len(p.encode()).to_bytes(4, "big") + p.encode() for p in parts)
    return hashlib.sha256(framed).hexdigest()[:32]


def parse_correction(
    board_id: str,
    correction_id: str,
    reason: str,
    adjustments: Sequence[tuple[str, int]],
    *,
    at: str = "",
) -> CorrectionRequest | list[FieldError]:
    """The correction, or every field error in it (fields named from ``at``, e.g. ``input.``)."""
    errors = []
    problem = text_error(correction_id, MAX_CORRECTION_ID)
    if problem is not None:
        errors.append(FieldError(f"{at}correctionId", problem))
    problem = text_error(reason, MAX_REASON)
    if problem is not None:
        errors.append(FieldError(f"{at}reason", problem))
    if not 1 <= len(adjustments) <= MAX_ADJUSTMENTS:
        errors.append(
            FieldError(
                f"{at}adjustments", f"must hold 1..{MAX_ADJUSTMENTS} adjustments, got {len(adjustments)}"
            )
        )
    first: dict[str, int] = {}
    for i, (user_id, score) in enumerate(adjustments):
        where = f"{at}adjustments[{i}]"
        problem = user_id_error(user_id)
        if problem is not None:
            errors.append(FieldError(f"{where}.userId", problem))
        elif user_id in first:
            errors.append(
                FieldError(
                    f"{where}.userId", f"{user_id!r} is adjusted twice (also adjustments[{first[user_id]}])"
                )
            )
        else:
            first[user_id] = i
        if not -MAX_EXACT < score < MAX_EXACT:
            errors.append(FieldError(f"{where}.score", "must be an exact integer with |score| < 2^53"))
    if errors:
        return errors
    return CorrectionRequest(board_id, correction_id, reason, tuple(Adjustment(u, s) for u, s in adjustments))


def approximate_refusal(board: Board, field: str) -> str | None:
    """Why ``board`` takes no correction because it is approximate (``field`` names the board's
    argument, with its separator); None for an exact board."""
    if board.approximate is None:
        return None
    return (
        f"{field}leaderboard {board.base_id!r} is approximate (trending): its result holds estimated counts "
        f"of its best {board.approximate.k} items, not final scores, so it takes no corrections; hide an "
        "item (hidePlayer) to publish the result without it"
    )


def next_result_version(last_assigned: int | None) -> int:
    """The version a new correction publishes, after the last one assigned (None: only the close's)."""
    return (last_assigned or FIRST_RESULT_VERSION) + 1


def not_in_result(adjustments: Iterable[Adjustment], present: Mapping[str, bool]) -> list[int]:
    """Indexes of the adjustments whose player is not in the board's result (corrections change
    scores, never who is in the result, so every version holds the same players)."""
    return [i for i, a in enumerate(adjustments) if not present.get(a.user_id, False)]


# Applying a correction record in a processor task


@dataclass(frozen=True, slots=True)
class Corrected:
    state: PlayerState
    seen: Seen  # the copy to remember: the record read again changes nothing


@dataclass(frozen=True, slots=True)
class UnknownPlayer:
    """The task has no total of the player: there is nothing to correct here."""


CorrectionOutcome = Corrected | Duplicate | Conflict | Forgotten | OutOfRange | UnknownPlayer


def identity_of(record: CorrectionRecord) -> tuple[str, str, int]:
    """(dedupe event id, digest, time judged by) of a correction record."""
    return (
        correction_event_id(record.board_id, record.correction_id, record.user_id),
        correction_digest(record.score, record.result_version),
        record.created_at_ms,
    )


def is_final(regions: Iterable[str], cutoff_met: Mapping[str, bool]) -> bool:
    """A board's fold in a partition is final once the cutoff of every region is met there: every
    later award of the board is late, so a correction applied then is never added to."""
    return all(cutoff_met.get(region, False) for region in regions)


def apply_correction(
    state: PlayerState | None, seen: Seen | None, record: CorrectionRecord, memory: DedupeMemory
) -> CorrectionOutcome:
    """Apply a correction record to the player's (final) state, given the remembered copy, if any."""
    event_id, digest, at_ms = identity_of(record)
    repeat = repeat_of(event_id, digest, at_ms, seen, memory)
    if repeat is not None:
        return repeat
    if not -MAX_EXACT < record.score < MAX_EXACT:
        return OutOfRange(event_id, record.score)
    if state is None:
        return UnknownPlayer()
    # The score is set; the entry still shows the metadata of the award that held it.
    notes = ((state.reached, state.metadata),) if state.metadata else ()
    corrected = PlayerState(record.score, state.version + 1, state.reached, metadata=state.metadata, notes=notes)
    return Corrected(corrected, Seen(digest, at_ms))


# The home region's steps for a recorded correction


@dataclass(frozen=True, slots=True)
class WriteRecords:
    """Write one correction record per adjusted player, then record where they landed."""


@dataclass(frozen=True, slots=True)
class AwaitProjection:
    """The home projection does not reflect the correction yet (positions ``missing``, or players
    whose total is not the corrected score yet)."""

    missing: frozenset[str]
    players: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ArchiveVersion:
    """The projection holds version n+1: archive it, then record it as the board's newest result."""


CorrectionStep = WriteRecords | AwaitProjection | ArchiveVersion


def correction_step(
    written: Mapping[str, int] | None,
    positions: Mapping[str, int],
    adjustments: Iterable[Adjustment],
    totals: Mapping[str, int | None],
    moderated: Iterable[tuple[str, bool]] = (),
) -> CorrectionStep:
    """What the home lifecycle worker does next for a correction: ``written`` is where its records
    landed (position name -> offset of the last one there; None: not written yet), ``positions`` the
    home projection's positions, ``totals`` the projection's totals of the adjusted players and of
    those a moderation action hides (absent: None) or shows again (``moderated``).

    A moderation action's version has no records of its own: ``written`` is where the action's record
    landed, and passing it is enough. A version claimed before that was recorded (by an older release)
    waits instead until the projection shows each player as the action asks."""
    adjustments = tuple(adjustments)
    if written is None and adjustments:
        return WriteRecords()
    missing = frozenset(where for where, offset in (written or {}).items() if positions.get(where, -1) < offset)
    behind = tuple(a.user_id for a in adjustments if totals.get(a.user_id) != a.score)
    if written is None:
        behind += tuple(user for user, hidden in moderated if (totals.get(user) is None) != hidden)
    if missing or behind:
        return AwaitProjection(missing, behind)
    return ArchiveVersion()
