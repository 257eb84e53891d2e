"""A TCP proxy in front of a real server that a test can slow down, hold, cut, black-hole and heal,
to fault one client, or one link between regions, only.

Modes: forwarding (the start, and after ``heal``); ``hold`` (replies held: the server looks hung);
``cut`` (connections dropped, new ones refused: the server looks down, and clients know at once);
``blackhole`` (a silent partition: open connections stay open but nothing passes either way, and
new connections are accepted but lead nowhere; no client is told anything). ``heal`` forwards
again, as a network does when a partition ends: what was held is delivered, connections accepted
during a blackhole are connected to the server then, and those whose client gave up meanwhile end.
"""

from __future__ import annotations

import asyncio
import contextlib


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self.port = 0  # where it listens, once started
        self._writers: set[asyncio.StreamWriter] = set()
        self.delay_s = 0.0  # added before each reply chunk reaches the client
        self.cut_off = False
        self._replies = asyncio.Event()  # set while replies flow; cleared by hold()
        self._replies.set()
        self._flowing = asyncio.Event()  # set unless black-holed: anything passes at all
        self._flowing.set()

    async def start(self, port: int = 0) -> int:
        """Listen on ``port`` (any free one by default) and return it (``port`` afterwards)."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    @property
    def black_holed(self) -> bool:
        return not self._flowing.is_set()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, slow: bool) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while True:
                await self._flowing.wait()  # black-holed: nothing is read, so the sender's buffers fill
                data = await reader.read(65536)
                if not data:
                    break
                await self._flowing.wait()  # read just before the blackhole began: held, not passed
                if slow:
                    await self._replies.wait()
                    if self.delay_s:
                        await asyncio.sleep(self.delay_s)
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            await self._flowing.wait()  # accepted, but leading nowhere until the heal
            if self.cut_off:
                return
            try:
                upstream_reader, upstream_writer = await asyncio.open_connection(*self._target)
            except OSError:
                return
            self._writers.add(upstream_writer)
            await asyncio.gather(
                self._pipe(reader, upstream_writer, slow=False),
                self._pipe(upstream_reader, writer, slow=True),
            )
            self._writers.discard(upstream_writer)
        finally:
            writer.close()
            self._writers.discard(writer)

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

    def blackhole(self) -> None:
        """Pass nothing, tell no one: a silent partition (see the module's docstring)."""
        self._flowing.clear()

    def heal(self) -> None:
        """Forward again, after ``cut`` or ``blackhole``."""
        self.cut_off = False
        self._flowing.set()

    async def close(self) -> None:
        self.delay_s = 0
        self.release()
        self.cut()
        self._flowing.set()  # the pipes and accepts that wait see the cut and end
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
