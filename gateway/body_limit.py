"""A cap on request bodies: one over the limit is refused with 413 before it is all read.

A declared ``Content-Length`` over the limit is refused at once, without reading a byte; a body
without one (chunked) is refused as soon as what arrived passes the limit. The response closes
the connection, so the client stops sending.
"""

from __future__ import annotations

import msgspec
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway import metrics


class BodyTooLarge(Exception):
    pass


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            return await self._refuse(send)
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, watched_send)
        except BodyTooLarge:
            if started:  # pragma: no cover - bodies are read before any response starts
                raise
            await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        metrics.REFUSED.labels("body_too_large").inc()
        message = f"request body is over {self.max_bytes} bytes (gateway.max_body_bytes)"
        body = msgspec.json.encode(
            {"errors": [{"message": message, "extensions": {"code": "LIMIT_EXCEEDED"}}]}
        )
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
