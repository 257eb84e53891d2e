"""A TCP proxy in front of a real server that a test can slow down, hold, cut and heal, to fault one
client only."""

from __future__ import annotations

import asyncio
import contextlib


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.delay_s = 0.0  # added before each reply chunk reaches the client
        self.cut_off = False
        self._replies = asyncio.Event()  # set while replies flow; cleared by hold()
        self._replies.set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, slow: bool) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await reader.read(65536):
                if slow:
                    await self._replies.wait()
                    if self.delay_s:
                        await asyncio.sleep(self.delay_s)
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut_off:
            writer.close()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, upstream_writer}
        await asyncio.gather(
            self._pipe(reader, upstream_writer, slow=False), self._pipe(upstream_reader, writer, slow=True)
        )
        self._writers -= {writer, upstream_writer}

    def hold(self) -> None:
        """Keep every reply from the client until ``release``: the server looks hung, not down."""
        self._replies.clear()

    def release(self) -> None:
        self._replies.set()

    def cut(self) -> None:
        """Drop every connection and refuse new ones: the server looks down."""
        self.cut_off = True
        for writer in list(self._writers):
            writer.close()

    def heal(self) -> None:
        self.cut_off = False

    async def close(self) -> None:
        self.delay_s = 0
        self.release()
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
