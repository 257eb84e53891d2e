"""The canonical event id and payload digest of an award. Golden vectors in the tests pin both.

The event id identifies *which* award this is (board, match, player, award type), so a retry of the
same award carries the same id in every region. The digest covers the rest of the payload, so a
repeat that differs is detected as a conflict instead of silently deduplicated.
"""

from __future__ import annotations

import hashlib


def _framed(*parts: str) -> bytes:
    # Length-prefixed UTF-8 fields: no separator inside a field can make two tuples collide.
    out = bytearray()
    for part in parts:
        raw = part.encode("utf-8")
        out += len(raw).to_bytes(4, "big") + raw
    return bytes(out)


def event_id(leaderboard_id: str, match_id: str, user_id: str, award_type: str) -> str:
    """32 hex characters: SHA-256 over the framed identity fields, truncated to 128 bits."""
    framed = _framed("award.v1", leaderboard_id, match_id, user_id, award_type)
    return hashlib.sha256(framed).hexdigest()[:32]


def payload_digest(amount: int, occurred_at_ms: int | None, metadata: str = "") -> str:
    """16 hex characters over the non-identity payload (the amount, the event time and the award's
    metadata as its canonical JSON text). An award without metadata frames what it always did, so
    its digest is the one recorded before awards carried metadata."""
    parts = ["payload.v1", str(amount), "" if occurred_at_ms is None else str(occurred_at_ms)]
    framed = _framed(*parts, metadata) if metadata else _framed(*parts)
    return hashlib.sha256(framed).hexdigest()[:16]


def correction_event_id(leaderboard_id: str, correction_id: str, user_id: str) -> str:
    """The dedupe identity of one player's adjustment by one correction (never an award's: its own
    domain), so a correction record read twice is applied once."""
    framed = _framed("correction.v1", leaderboard_id, correction_id, user_id)
    return hashlib.sha256(framed).hexdigest()[:32]


def correction_digest(score: int, result_version: int) -> str:
    """16 hex characters over what a correction sets: the score and the result version it publishes."""
    return hashlib.sha256(_framed("correction-payload.v1", str(score), str(result_version))).hexdigest()[:16]
