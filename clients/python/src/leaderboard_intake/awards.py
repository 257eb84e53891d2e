"""What a game service sends and what it gets back, and how a request is signed. Pure."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

MAX_WAIT_MS = 2000


@dataclass(frozen=True, slots=True)
class Award:
    """One award: ``delta`` on a SUM board, ``score`` on a MAX, MIN or LATEST board (exactly one).
    ``occurred_at`` (timezone-aware) is required on boards with a time window; set it once, when the
    award happens, so that every retry carries the same one. ``metadata``: a JSON object of at most
    512 bytes, shown with the entry when this award holds its score."""

    leaderboard_id: str
    user_id: str
    match_id: str
    award_type: str
    delta: int | None = None
    score: int | None = None
    occurred_at: datetime | None = None
    metadata: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if (self.delta is None) == (self.score is None):
            raise ValueError("an award has exactly one of delta and score")
        if self.occurred_at is not None and self.occurred_at.tzinfo is None:
            raise ValueError("occurred_at must be timezone-aware")

    def to_json(self) -> dict[str, Any]:
        """The award as the intake reads it."""
        body: dict[str, Any] = {
            "leaderboardId": self.leaderboard_id,
            "userId": self.user_id,
            "matchId": self.match_id,
            "awardType": self.award_type,
        }
        if self.delta is not None:
            body["delta"] = self.delta
        if self.score is not None:
            body["score"] = self.score
        if self.occurred_at is not None:
            body["occurredAt"] = self.occurred_at.isoformat()
        if self.metadata is not None:
            body["metadata"] = dict(self.metadata)
        return body


@dataclass(frozen=True, slots=True)
class Applied:
    """The player's entry in the accepting region's projection once it covers the award."""

    score: int
    rank: int
    shared_rank: int
    changed: bool


@dataclass(frozen=True, slots=True)
class Accepted:
    """An award the intake acknowledged (durably in Kafka): where it landed, and with
    ``wait_applied_ms`` its entry once applied (None: the wait ended first; ``waited`` False: not asked)."""

    event_id: str
    region: str
    partition: int
    offset: int
    applied: Applied | None = None
    waited: bool = False


@dataclass(frozen=True, slots=True)
class FieldProblem:
    field: str
    rule: str


class IntakeError(Exception):
    """Base of the errors of this client."""


class AwardRefused(IntakeError):
    """The intake refused the request for what it is (sending it again gets the same answer):
    ``status``, ``code`` (e.g. ``invalid_field``, ``unknown_board``, ``board_closed``) and every field at fault."""

    def __init__(self, status: int, code: str, message: str, fields: tuple[FieldProblem, ...] = ()) -> None:
        details = "; ".join(f"{f.field}: {f.rule}" for f in fields)
        super().__init__(f"HTTP {status} {code}: {message}" + (f" ({details})" if details else ""))
        self.status, self.code, self.message, self.fields = status, code, message, fields


class IntakeUnavailable(IntakeError):
    """No endpoint accepted the award within the attempts: its outcome may be unknown (a timeout after
    the intake wrote it). Sending the same award again later is safe: it is counted once."""

    def __init__(self, attempts: int, last: str) -> None:
        super().__init__(f"no intake accepted the award after {attempts} attempts; last: {last}")
        self.attempts, self.last = attempts, last


def encode(awards: list[Award]) -> bytes:
    body: Any = awards[0].to_json() if len(awards) == 1 else {"awards": [a.to_json() for a in awards]}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def signed_headers(key_id: str, secret: str, timestamp_s: int, body: bytes) -> dict[str, str]:
    """The intake's signature: ``X-Award-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>``."""
    mac = hmac.new(secret.encode(), str(timestamp_s).encode() + b"." + body, hashlib.sha256)
    return {
        "content-type": "application/json",
        "x-award-key-id": key_id,
        "x-award-timestamp": str(timestamp_s),
        "x-award-signature": "v1=" + mac.hexdigest(),
    }


def query(wait_applied_ms: int | None) -> dict[str, str]:
    if wait_applied_ms is None:
        return {}
    if not 0 < wait_applied_ms <= MAX_WAIT_MS:
        raise ValueError(f"wait_applied_ms must be 1..{MAX_WAIT_MS}")
    return {"wait": "applied", "timeoutMs": str(wait_applied_ms)}


def accepted_of(body: Any, waited: bool) -> list[Accepted]:
    """A 202 answer's awards, in request order."""
    out = []
    for item in body["accepted"]:
        applied = item.get("applied")
        out.append(Accepted(
            event_id=item["eventId"], region=item["region"], partition=int(item["partition"]),
            offset=int(item["offset"]), waited=waited,
            applied=None if applied is None else Applied(
                int(applied["score"]), int(applied["rank"]), int(applied["sharedRank"]),
                bool(applied["changed"]),
            ),
        ))  # fmt: skip
    return out


def refused_of(status: int, body: Any) -> AwardRefused:
    error = body.get("error", {}) if isinstance(body, dict) else {}
    fields = tuple(FieldProblem(str(f.get("field")), str(f.get("rule"))) for f in error.get("fields", []))
    return AwardRefused(status, str(error.get("code", "http_error")), str(error.get("message", "")), fields)


def retry_after_s(value: str | None) -> float | None:
    """``Retry-After`` in seconds (the intake sends seconds; an HTTP date is not used)."""
    try:
        return None if value is None else max(0.0, float(value))
    except ValueError:
        return None

