"""Validation of untrusted award input at the intake edge. Every rejection names field and rule.

Ids follow the shared rules of ``regions.core.ids`` (the gateway checks them the same way). An award
changes a total: ``delta`` is never 0, and negative only on a board that allows it; ``score`` (best-of
boards) is any exact integer: a JSON number with no fraction, however it is written (``5``, ``5.0``,
``5e0``: one number, as JSON Schema's ``integer`` says). ``occurredAt`` is an RFC 3339 date-time
(section 5.6, the document's ``format: date-time``), no other ISO 8601 spelling. ``metadata`` is
optional: a JSON object, kept as its canonical text (``regions.core.metadata``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from regions.core.boards import Board
from regions.core.ids import MAX_AWARD_TYPE, MAX_MATCH_ID, board_id_error, text_error, user_id_error
from regions.core.metadata import canonical_metadata

MAX_EXACT = 2**53
AWARD_FIELDS = frozenset(
    {"matchId", "leaderboardId", "userId", "awardType", "delta", "score", "occurredAt", "metadata"}
)


@dataclass(frozen=True, slots=True)
class FieldError:
    field: str
    rule: str


def player_action_errors(user_id: str, reason: str, max_reason: int) -> list[FieldError]:
    """The field errors of an admin action on a player: ``userId`` (as every id) and ``reason``
    (1..``max_reason`` printable characters)."""
    errors = []
    problem = user_id_error(user_id)
    if problem is not None:
        errors.append(FieldError("userId", problem))
    problem = text_error(reason, max_reason)
    if problem is not None:
        errors.append(FieldError("reason", problem))
    return errors


@dataclass(frozen=True, slots=True)
class AwardInput:
    leaderboard_id: str
    match_id: str
    user_id: str
    award_type: str
    delta: int | None
    score: int | None
    occurred_at_ms: int | None
    metadata: str = ""  # canonical JSON text (regions.core.metadata); empty: none

    @property
    def amount(self) -> int:
        value = self.delta if self.delta is not None else self.score
        if value is None:
            raise ValueError("award has neither delta nor score; validation should have refused it")
        return value


@dataclass(frozen=True, slots=True)
class BatchTooLarge:
    size: int
    limit: int


@dataclass(frozen=True, slots=True)
class Invalid:
    errors: tuple[FieldError, ...]


@dataclass(frozen=True, slots=True)
class Parsed:
    awards: tuple[AwardInput, ...]
    field_prefixes: tuple[str, ...]


def _id(
    raw: dict[str, object], name: str, rule: Callable[[str], str | None], errors: list[FieldError], at: str
) -> str:
    value = raw.get(name)
    if not isinstance(value, str):
        errors.append(FieldError(at + name, "is required and must be a string"))
        return ""
    problem = rule(value)
    if problem is not None:
        errors.append(FieldError(at + name, problem))
    return value


def _integer(raw: dict[str, object], name: str, errors: list[FieldError], at: str) -> int | None:
    if name not in raw:
        return None
    value = raw[name]
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # written with a fraction or an exponent: still an integer (exact below 2^53)
    if isinstance(value, bool) or not isinstance(value, int):
        errors.append(FieldError(at + name, "must be an integer" + (", not null" if value is None else "")))
        return None
    if not -MAX_EXACT < value < MAX_EXACT:
        errors.append(FieldError(at + name, "must be an exact integer with |value| < 2^53"))
        return None
    return value


_DATE_TIME = r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:(?P<second>[0-9]{2})(?:\.[0-9]+)?"
_RFC3339 = re.compile(_DATE_TIME + r"(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")
_LOCAL_TIME = re.compile(_DATE_TIME)
_GREGORIAN_CYCLE_MS = 146_097 * 86_400_000  # 400 years: the calendar repeats


def rfc3339_ms(text: str) -> int | None:
    """Unix milliseconds of an RFC 3339 date-time (``T``/``t``, ``Z``/``z``, any fraction of a second,
    a leap second ``60`` at 23:59 UTC, years 0000..9999), or None for anything else. The milliseconds
    are ``datetime.timestamp()``'s, truncated: they are part of an award's payload digest, so every
    release must compute the same ones."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        return None
    leap = match["second"] == "60"
    normal = (text[:17] + ("59" if leap else match["second"]) + text[19:]).upper()
    shift = _GREGORIAN_CYCLE_MS if normal.startswith("0000") else 0  # datetime begins at year 1
    try:
        parsed = datetime.fromisoformat(f"0400{normal[4:]}" if shift else normal)
    except ValueError:  # no such day, hour, minute or offset
        return None
    ms = int(parsed.timestamp() * 1000) - shift
    if leap and ms // 1000 % 86_400 != 86_399:
        return None  # a leap second is the 61st second of 23:59 UTC
    return ms + 1000 if leap else ms


def _time(raw: dict[str, object], errors: list[FieldError], at: str) -> int | None:
    value = raw.get("occurredAt")
    if value is None:  # optional: null is the same as absent
        return None
    ms = rfc3339_ms(value) if isinstance(value, str) else None
    if ms is None:
        local = isinstance(value, str) and _LOCAL_TIME.fullmatch(value) is not None
        rule = "must include a time zone offset (Z or +hh:mm)" if local else \
            "must be an RFC 3339 time such as 2026-01-31T12:00:00Z"  # fmt: skip
        errors.append(FieldError(at + "occurredAt", rule))
    return ms


def _metadata(raw: dict[str, object], errors: list[FieldError], at: str) -> str:
    if "metadata" not in raw:
        return ""
    try:
        return canonical_metadata(raw["metadata"])
    except ValueError as exc:
        errors.append(FieldError(at + "metadata", str(exc)))
        return ""


def parse_award(raw: object, at: str = "") -> AwardInput | list[FieldError]:
    """One award object into a core value, or every field error found in it."""
    if not isinstance(raw, dict):
        return [FieldError(at.rstrip(".") or "body", "must be a JSON object")]
    errors = [FieldError(at + name, "is not a known field") for name in sorted(set(raw) - AWARD_FIELDS)]
    award = AwardInput(
        leaderboard_id=_id(raw, "leaderboardId", board_id_error, errors, at),
        match_id=_id(raw, "matchId", lambda v: text_error(v, MAX_MATCH_ID), errors, at),
        user_id=_id(raw, "userId", user_id_error, errors, at),
        award_type=_id(raw, "awardType", lambda v: text_error(v, MAX_AWARD_TYPE), errors, at),
        delta=_integer(raw, "delta", errors, at),
        score=_integer(raw, "score", errors, at),
        occurred_at_ms=_time(raw, errors, at),
        metadata=_metadata(raw, errors, at),
    )
    has_delta, has_score = "delta" in raw, "score" in raw
    if has_delta == has_score:
        errors.append(FieldError(at + "delta", "exactly one of delta or score is required"))
    if award.delta == 0:
        errors.append(FieldError(at + "delta", "must not be 0: an award changes the total"))
    return errors or award


def parse_request(body: object, max_batch: int) -> Parsed | Invalid | BatchTooLarge:
    """A request body (one award, or ``{"awards": [...]}``) into awards in request order."""
    if isinstance(body, dict) and "awards" in body:
        items = body["awards"]
        if set(body) != {"awards"}:
            extra = sorted(set(body) - {"awards"})
            return Invalid(tuple(FieldError(name, "is not a known field") for name in extra))
        if not isinstance(items, list) or not items:
            return Invalid((FieldError("awards", "must be a non-empty array of awards"),))
        if len(items) > max_batch:
            return BatchTooLarge(len(items), max_batch)
        prefixes = tuple(f"awards[{i}]." for i in range(len(items)))
    else:
        items, prefixes = [body], ("",)
    awards: list[AwardInput] = []
    errors: list[FieldError] = []
    for raw, prefix in zip(items, prefixes, strict=True):
        result = parse_award(raw, prefix)
        if isinstance(result, list):
            errors += result
        else:
            awards.append(result)
    return Invalid(tuple(errors)) if errors else Parsed(tuple(awards), prefixes)


def check_event_time(award: AwardInput, now_ms: int, max_future_ms: int, at: str = "") -> list[FieldError]:
    """``occurredAt`` may be ahead of the intake's clock by at most ``max_future_ms`` (clocks drift;
    an award from further ahead would count in a period that has not begun)."""
    if award.occurred_at_ms is not None and award.occurred_at_ms > now_ms + max_future_ms:
        return [
            FieldError(
                at + "occurredAt", f"must be at most {max_future_ms // 1000} s after the intake's clock"
            )
        ]
    return []


def check_against_board(award: AwardInput, board: Board, at: str = "") -> list[FieldError]:
    """Rules that depend on the board: SUM boards take ``delta`` (negative only when the board allows
    it), best-of boards take ``score``; a board with a time window needs ``occurredAt``, because the
    award's period is its event time: an acceptance time would put a retry accepted by another
    region across a period boundary in another period, and regions would disagree."""
    if board.window and award.occurred_at_ms is None:
        return [FieldError(at + "occurredAt", f"is required: board {board.id} has a time window, and an "
                           "award counts in the period of its event time")]  # fmt: skip
    wanted = board.amount_field
    if getattr(award, wanted) is None:
        other = "score" if wanted == "delta" else "delta"
        return [FieldError(at + other, f"board {board.id} is {board.aggregation}: send {wanted} instead")]
    if award.delta is not None and award.delta < 0 and not board.allow_negative:
        return [
            FieldError(at + "delta", f"must be positive: board {board.id} does not allow negative deltas")
        ]
    return []
