"""A TCP proxy that a test can cut and heal, to make one server unreachable for one region only."""

from __future__ import annotations

import asyncio
import contextlib


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.cut_off = False

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut_off:
            writer.close()  # the server looks down: connections are refused at once
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, upstream_writer}
        await asyncio.gather(self._pipe(reader, upstream_writer), self._pipe(upstream_reader, writer))
        self._writers -= {writer, upstream_writer}

    def cut(self) -> None:
        """Drop every connection and refuse new ones until ``heal``."""
        self.cut_off = True
        for writer in list(self._writers):
            writer.close()

    def heal(self) -> None:
        self.cut_off = False

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
