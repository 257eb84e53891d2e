"""The intake's HTTP protocol: uvicorn's httptools protocol, whose writes within one step of the event
loop leave as one. uvicorn writes an answer's head and its body in two transport writes; with
TCP_NODELAY (set on every TCP connection of uvloop's) each is a send(2) and a segment of its own, so
every small answer cost the intake two system calls and the client two segments to read. Writes are
gathered and written, in order, once the step that made them ends; a close or an end of stream
writes what is gathered first, and nothing is written to a connection that is closing (as the
transport itself would not)."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class GatheredWrites:
    """A transport whose writes of one loop step go to ``transport`` as one; all else is the transport's."""

    __slots__ = ("_loop", "_pending", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))  # a copy of a buffer its owner may change; bytes stay as they are

    def writelines(self, lines: Any) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        """Write what is gathered now (a scheduled flush then finds nothing)."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        if not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(map(len, self._pending))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._pending = []
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class IntakeProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol on a transport whose writes are gathered (``GatheredWrites``)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(GatheredWrites(transport, self.loop))  # type: ignore[arg-type]
