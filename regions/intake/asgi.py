"""The intake's ASGI app: ``POST /internal/awards`` is answered straight from the server's scope and
messages, with no router, middleware or request and response objects in between (it is the one
route that carries load, and each of those layers costs a share of every award's CPU); every other
request (the OpenAPI document, health and metrics routes, a wrong method) and the lifespan go to a
Starlette app.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

log = logging.getLogger(__name__)

AWARDS_PATH = "/internal/awards"
_JSON = (b"content-type", b"application/json")


@dataclass(frozen=True, slots=True)
class Answer:
    """A JSON answer: status, encoded body, and Retry-After seconds (0: none)."""

    status: int
    body: bytes
    retry_after: int = 0

    async def send(self, send: Send) -> None:
        headers = [_JSON, (b"content-length", str(len(self.body)).encode())]
        if self.retry_after:
            headers.append((b"retry-after", str(self.retry_after).encode()))
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


class ClientGone(Exception):
    """The client disconnected before its request's body was read: nobody is left to answer."""


class TooLarge(Exception):
    """The body is over the cap; reading stopped there."""


async def read_body(receive: Receive, limit: int) -> bytes:
    """The request's body, read no further than ``limit`` bytes (a chunked body declares no length)."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise TooLarge()
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


Awards = Callable[[Scope, Receive], Awaitable[Answer]]


class IntakeApp:
    """``POST /internal/awards`` by ``awards``; everything else, the lifespan included, by ``rest``."""

    def __init__(self, awards: Awards, rest: Starlette) -> None:
        self.awards = awards
        self.rest = rest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != AWARDS_PATH or scope["method"] != "POST":
            await self.rest(scope, receive, send)
            return
        try:
            answer = await self.awards(scope, receive)
        except ClientGone:
            return
        except Exception:
            # As Starlette's error middleware does: a plain 500, then the error to the server's log.
            await send({"type": "http.response.start", "status": 500,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", b"21")]})  # fmt: skip
            await send({"type": "http.response.body", "body": b"Internal Server Error"})
            raise
        await answer.send(send)
