"""The award intake's HTTP contract as data: every refusal it answers (code, status, when), and the
OpenAPI 3.1 document of its routes, built from the rules the intake validates with (the id rules of
``regions.core.ids``, the limits of ``regions.core.validation``, the signature of
``regions.core.signing``), so the document cannot drift from what the intake does. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from regions.core.ids import BOARD_ID, MAX_AWARD_TYPE, MAX_MATCH_ID, MAX_USER_ID
from regions.core.metadata import MAX_METADATA_BYTES
from regions.core.signing import AuthFailure, Denied
from regions.core.validation import AWARD_FIELDS, MAX_EXACT
from regions.core.waits import MAX_TIMEOUT_MS, WAIT_APPLIED


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    when: str
    retry_after: bool = False  # answered with Retry-After (seconds)


_AUTH_WHEN = {
    AuthFailure.MISSING: "a signature header is missing",
    AuthFailure.MALFORMED: "X-Award-Timestamp is not unix seconds",
    AuthFailure.SKEWED: "X-Award-Timestamp is further from the intake's clock than intake.max_clock_skew_s",
    AuthFailure.UNKNOWN_KEY: "X-Award-Key-Id names no key",
    AuthFailure.BAD_SIGNATURE: "X-Award-Signature does not match the body",
}

REFUSALS: dict[str, Refusal] = {
    "overloaded": Refusal(
        503,
        "the intake process holds as many awards as it may between reading their requests and Kafka's "
        "acknowledgement (intake.max_in_flight_awards, lowered while acknowledgements take longer than "
        "intake.ack_target_ms; after waiting intake.admission_wait_s, if set), or its event loop has run "
        "more than intake.max_loop_behind_ms behind its work for 100 ms: refused before the body is parsed "
        "when it can be; nothing was written, send the same awards after Retry-After",
        retry_after=True,
    ),
    "unsupported_media_type": Refusal(415, "Content-Type is not application/json (a charset, if given, UTF-8)"),
    "body_too_large": Refusal(413, "the body is over intake.max_body_bytes"),
    **{f"auth_{reason}": Refusal(Denied(reason, "").status, _AUTH_WHEN[reason]) for reason in AuthFailure},
    "invalid_parameter": Refusal(400, "a query parameter breaks its rule (each named in fields)"),
    "invalid_json": Refusal(400, "the body is not JSON"),
    "batch_too_large": Refusal(413, "more awards in one request than intake.max_batch"),
    "invalid_field": Refusal(400, "a field breaks its rule (each named in fields)"),
    "unknown_board": Refusal(404, "leaderboardId names no board"),
    "board_closed": Refusal(409, "the board is CLOSING or CLOSED: it takes no more awards"),
    "period_closed": Refusal(409, "the award's period (or rolling day) takes no more awards"),
    "player_erased": Refusal(410, "userId names a player whose data was erased (until an operator lifts it)"),
    "rate_limited": Refusal(429, "the key id is over its award rate", retry_after=True),
    "store_unavailable": Refusal(503, "the board catalog cannot be read now", retry_after=True),
    "unsupported_window": Refusal(503, "the board has a time window this intake's release does not know"),
    "kafka_unavailable": Refusal(503, "Kafka did not acknowledge the awards in time (retry the same awards)", True),
    "home_unavailable": Refusal(
        503,
        "a HOME_ROUTED board's home region did not acknowledge its awards within "
        "intake.home_delivery_timeout_s (no other region accepts them; retry the same awards)",
        retry_after=True,
    ),
}
"""Every refusal of ``POST /internal/awards`` by its code; nothing is written when one is answered."""


def _text(limit: int, what: str) -> dict[str, Any]:
    return {
        "type": "string", "minLength": 1, "maxLength": limit, "pattern": r"\S",
        "description": f"{what}: 1..{limit} printable characters, not only white space.",
    }  # fmt: skip


EXACT = {"type": "integer", "minimum": -(MAX_EXACT - 1), "maximum": MAX_EXACT - 1}


def award_schema() -> dict[str, Any]:
    """One award as the intake reads it (``regions.core.validation.parse_award``)."""
    properties: dict[str, Any] = {
        "leaderboardId": {
            "type": "string", "pattern": BOARD_ID.pattern,
            "description": "The board: 1..128 letters, digits and . _ : -, starting with a letter or digit.",
        },
        "userId": _text(MAX_USER_ID, "The player"),
        "matchId": _text(MAX_MATCH_ID, "The match (with the board, player and award type: the award's identity)"),
        "awardType": _text(MAX_AWARD_TYPE, "What the award is for"),
        "delta": {**EXACT, "not": {"const": 0},
                  "description": "The change of a SUM board's total: never 0; negative only on a board that allows it."},
        "score": {**EXACT, "description": "The score on a MAX, MIN or LATEST board."},
        "occurredAt": {
            "type": "string", "format": "date-time",
            "description": "RFC 3339 with an offset, at most windows.max_future_s ahead of the intake's clock; "
            "required on boards with a time window.",
        },
        "metadata": {
            "type": "object",
            "description": f"A JSON object of at most {MAX_METADATA_BYTES} bytes encoded (compact UTF-8), shown "
            "with the entry while this award holds its score.",
        },
    }  # fmt: skip
    missing = AWARD_FIELDS - properties.keys()
    if missing:
        raise ValueError(f"the award schema does not describe {sorted(missing)}")
    return {
        "type": "object",
        "properties": properties,
        "required": ["leaderboardId", "userId", "matchId", "awardType"],
        "oneOf": [{"required": ["delta"]}, {"required": ["score"]}],
        "additionalProperties": False,
        "description": "Exactly one of delta and score. The event id is derived from (leaderboardId, matchId, "
        "userId, awardType): the same award sent again, to any region, is counted once.",
    }


def _error_response(status: int) -> dict[str, Any]:
    codes = sorted(code for code, r in REFUSALS.items() if r.status == status)
    lines = [f"- `{code}`: {REFUSALS[code].when}" for code in codes]
    response: dict[str, Any] = {
        "description": "\n".join(lines),
        "content": {"application/json": {"schema": {
            "type": "object", "required": ["error"], "additionalProperties": False,
            "properties": {"error": {"allOf": [{"$ref": "#/components/schemas/Error"}],
                                     "properties": {"code": {"enum": codes}}}},
        }}},
    }  # fmt: skip
    if any(REFUSALS[code].retry_after for code in codes):
        response["headers"] = {"Retry-After": {
            "description": "Seconds to wait before sending the same awards again.",
            "schema": {"type": "integer", "minimum": 1},
        }}  # fmt: skip
    return response


def _json_object(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": {"type": "object"}}}}


def openapi_document(version: str, max_batch: int, max_body_bytes: int) -> dict[str, Any]:
    """The intake's OpenAPI 3.1 document for these limits."""
    signed: dict[str, list[str]] = {"keyId": [], "timestamp": [], "signature": []}
    header = {"type": "apiKey", "in": "header"}
    statuses = sorted({r.status for r in REFUSALS.values()})
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Leaderboard award intake",
            "version": version,
            "description": "Game services send verified awards here. 202 means every award of the request is "
            "durably in Kafka (acks=all); any refusal means none was written.",
        },
        "paths": {
            "/internal/awards": {"post": {
                "operationId": "postAwards",
                "summary": "Accept one award, or a batch of awards (all or none)",
                "security": [signed],
                "parameters": [
                    {"name": "wait", "in": "query", "required": False, "schema": {"enum": [WAIT_APPLIED]},
                     "description": "applied: each accepted award also carries its entry in this region's "
                     "projection once it covers the award (null if timeoutMs passed first)."},
                    {"name": "timeoutMs", "in": "query", "required": False,
                     "schema": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS},
                     "description": f"How long to wait for the projection, in milliseconds (default {MAX_TIMEOUT_MS}); "
                     f"taken only with wait={WAIT_APPLIED}, refused without it."},
                ],
                "requestBody": {"required": True, "content": {"application/json": {"schema": {"oneOf": [
                    {"$ref": "#/components/schemas/Award"},
                    {"type": "object", "required": ["awards"], "additionalProperties": False, "properties": {
                        "awards": {"type": "array", "minItems": 1, "maxItems": max_batch,
                                   "items": {"$ref": "#/components/schemas/Award"}}}},
                ]}}}, "description": f"At most {max_body_bytes} bytes."},
                "responses": {
                    "202": {"description": "Every award accepted, in request order, where Kafka put it.",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Accepted"}}}},
                    **{str(status): _error_response(status) for status in statuses},
                },
            }},
            "/openapi.json": {"get": {"operationId": "openapi", "summary": "This document, for this intake's limits",
                                      "responses": {"200": _json_object("The OpenAPI 3.1 document.")}}},
            "/healthz": {"get": {"operationId": "healthz", "summary": "The process is alive",
                                 "responses": {"200": _json_object("Service name, process id, lag.")}}},
            "/readyz": {"get": {"operationId": "readyz", "summary": "The process can take awards", "responses": {
                "200": _json_object("Ready, with each check."),
                "503": _json_object("Not ready: the checks that fail."),
            }}},
            "/metrics": {"get": {"operationId": "metrics", "summary": "Prometheus metrics", "responses": {
                "200": {"description": "The Prometheus text format.", "content": {"text/plain": {"schema": {"type": "string"}}}},
            }}},
        },
        "components": {
            "securitySchemes": {
                "keyId": {**header, "name": "X-Award-Key-Id", "description": "The signing key's id."},
                "timestamp": {**header, "name": "X-Award-Timestamp", "description": "Unix seconds when signed."},
                "signature": {**header, "name": "X-Award-Signature",
                              "description": 'v1=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>'},
            },
            "schemas": {
                "Award": award_schema(),
                "Accepted": {"type": "object", "required": ["accepted"], "properties": {"accepted": {
                    "type": "array", "items": {"type": "object",
                                               "required": ["eventId", "region", "partition", "offset"],
                                               "properties": {
                        "eventId": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
                        "region": {"type": "string", "description": "The region whose awards topic accepted "
                                   "the award: this one, or a HOME_ROUTED board's home region."},
                        "partition": {"type": "integer", "minimum": 0},
                        "offset": {"type": "integer", "minimum": 0},
                        "applied": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Applied"}],
                                    "description": "With wait=applied only."},
                    }}}}},
                "Applied": {"type": "object", "required": ["score", "rank", "sharedRank", "changed"], "properties": {
                    "score": {"type": "integer"},
                    "rank": {"type": "integer", "minimum": 1},
                    "sharedRank": {"type": "integer", "minimum": 1},
                    "changed": {"type": "boolean", "description": "Whether the award moved the entry."},
                }},
                "Error": {"type": "object", "required": ["code", "message"], "properties": {
                    "code": {"type": "string"},
                    "message": {"type": "string"},
                    "fields": {"type": "array", "items": {
                        "type": "object", "required": ["field", "rule"], "additionalProperties": False,
                        "properties": {"field": {"type": "string"}, "rule": {"type": "string"}}}},
                }},
            },
        },
    }  # fmt: skip
