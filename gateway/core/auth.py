"""Admin authorization: ``Authorization: Bearer <token>`` compared in constant time."""

from __future__ import annotations

import hmac


def bearer_token(header: str | None) -> str | None:
    """The token of a ``Bearer`` authorization header, or None when there is none."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def is_admin(header: str | None, admin_token: str) -> bool:
    token = bearer_token(header)
    return token is not None and hmac.compare_digest(token.encode(), admin_token.encode())
