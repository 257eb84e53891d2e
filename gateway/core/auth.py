"""Admin authorization: ``Authorization: Bearer <token>`` compared in constant time."""

from __future__ import annotations

import hmac
from collections.abc import Sequence


def bearer_token(header: str | None) -> str | None:
    """The token of a ``Bearer`` authorization header, or None when there is none."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def is_admin(header: str | None, admin_tokens: Sequence[str]) -> bool:
    """Whether the header carries one of the admin tokens (two are accepted during a rotation)."""
    token = bearer_token(header)
    if token is None:
        return False
    matches = [hmac.compare_digest(token.encode(), admin.encode()) for admin in admin_tokens]
    return any(matches)
