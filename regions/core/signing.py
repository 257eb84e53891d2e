"""HMAC request signatures of the award intake (pure; the time is a parameter).

``X-Award-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<raw body>")>``
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from enum import StrEnum


class AuthFailure(StrEnum):
    MISSING = "missing"
    MALFORMED = "malformed"
    SKEWED = "skewed"
    UNKNOWN_KEY = "unknown_key"
    BAD_SIGNATURE = "bad_signature"


AUTH_HEADERS = ("X-Award-Key-Id", "X-Award-Timestamp", "X-Award-Signature")
HEADER_AT_FAULT = {  # the header a refusal names
    AuthFailure.MALFORMED: "X-Award-Timestamp",
    AuthFailure.SKEWED: "X-Award-Timestamp",
    AuthFailure.UNKNOWN_KEY: "X-Award-Key-Id",
    AuthFailure.BAD_SIGNATURE: "X-Award-Signature",
}


@dataclass(frozen=True, slots=True)
class Denied:
    reason: AuthFailure
    message: str

    @property
    def status(self) -> int:
        """401 when the caller is not authenticated at all, 403 when its credentials are refused."""
        refused = (AuthFailure.UNKNOWN_KEY, AuthFailure.BAD_SIGNATURE)
        return 403 if self.reason in refused else 401


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The signature header value for a body sent at ``timestamp`` (unix seconds)."""
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return "v1=" + mac.hexdigest()


def verify(
    key_id: str | None,
    timestamp: str | None,
    signature: str | None,
    body: bytes,
    secrets: dict[str, str],
    now_s: int,
    max_skew_s: int,
) -> str | Denied:
    """The verified key id, or why the request is denied."""
    if not key_id or not timestamp or not signature:
        return Denied(
            AuthFailure.MISSING, "X-Award-Key-Id, X-Award-Timestamp and X-Award-Signature are required"
        )
    if not timestamp.isdigit():
        return Denied(AuthFailure.MALFORMED, "X-Award-Timestamp must be unix seconds")
    if abs(now_s - int(timestamp)) > max_skew_s:
        return Denied(AuthFailure.SKEWED, f"X-Award-Timestamp is more than {max_skew_s}s from server time")
    secret = secrets.get(key_id)
    if secret is None:
        return Denied(AuthFailure.UNKNOWN_KEY, f"unknown X-Award-Key-Id {key_id!r}")
    expected = sign(secret, int(timestamp), body)
    if not hmac.compare_digest(expected.encode(), signature.encode()):
        return Denied(AuthFailure.BAD_SIGNATURE, "X-Award-Signature does not match the body")
    return key_id
