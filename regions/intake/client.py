"""A small client of the award intake for game services, tools and tests: signs and sends awards."""

from __future__ import annotations

import time
from typing import Any

import httpx
import msgspec

from regions.core.signing import sign


def signed_request(
    key_id: str, secret: str, payload: Any, now_s: int | None = None
) -> tuple[bytes, dict[str, str]]:
    """The body and headers of a signed award request."""
    body = msgspec.json.encode(payload)
    return body, {"content-type": "application/json", **signature_headers(key_id, secret, body, now_s)}


def signature_headers(key_id: str, secret: str, body: bytes, now_s: int | None = None) -> dict[str, str]:
    """The headers that sign ``body``, these exact bytes, at ``now_s`` (by default now)."""
    timestamp = int(time.time()) if now_s is None else now_s
    return {
        "x-award-key-id": key_id,
        "x-award-timestamp": str(timestamp),
        "x-award-signature": sign(secret, timestamp, body),
    }


class AwardClient:
    def __init__(
        self, base_url: str, key_id: str = "dev", secret: str = "dev-secret", timeout_s: float = 10
    ) -> None:
        self._http = httpx.AsyncClient(base_url=base_url, timeout=timeout_s)
        self._key_id, self._secret = key_id, secret

    async def send(self, payload: Any, params: dict[str, str] | None = None) -> httpx.Response:
        """POST one award or ``{"awards": [...]}`` (``params``: the query, e.g. ``{"wait": "applied"}``);
        returns the raw response."""
        body, headers = signed_request(self._key_id, self._secret, payload)
        return await self._http.post("/internal/awards", content=body, headers=headers, params=params)

    async def aclose(self) -> None:
        await self._http.aclose()


def describe_answer(response: httpx.Response) -> tuple[bool, str]:
    """Whether the intake accepted, and its answer in words: each award's position, or the error
    code, message and every field at fault."""
    try:
        body = response.json()
    except ValueError:
        return (
            False,
            f"error: HTTP {response.status_code} with a body that is not JSON: {response.text[:200]!r}",
        )
    if response.status_code == 202:
        return True, "\n".join(
            f"accepted: event {a['eventId']} in region {a['region']}, partition {a['partition']} offset {a['offset']}"
            for a in body["accepted"]
        )
    error = body.get("error", {})
    lines = [f"error: HTTP {response.status_code} {error.get('code')}: {error.get('message')}"]
    lines += [f"  {f['field']}: {f['rule']}" for f in error.get("fields", [])]
    if "retry-after" in response.headers:
        lines.append(f"  retry after {response.headers['retry-after']} s")
    return False, "\n".join(lines)
