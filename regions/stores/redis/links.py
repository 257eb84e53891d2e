"""Links: one connection to one Redis server that many reads share at once, for the reads that must
cost their process little CPU (the gateway's).

A link borrows one connection of a client's for good (from a server's pool, or from a cluster node)
and keeps it: closing the client closes the link, which then gives the connection back. A caller
sends its commands, packed in C by hiredis, in one write, and awaits one future per command; one
task reads every reply and hands each to the oldest future waiting, as Redis answers one
connection's commands in the order they came. Nothing else runs per command: no pool checkout, no
task, no timeout of its own (the round has one, ``exchange``), no response callback (replies are as
the server sent them, decoded to str).

A link that fails in any way (the connection lost, a caller cancelled or timed out mid-write, a
round that timed out) is broken: every caller waiting on it fails with a ConnectionError, and the
next round opens another link.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import hiredis
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

Arg = str | int | float


@dataclass(frozen=True, slots=True)
class Command:
    """One command, routed by ``key`` (its slot on a cluster); ``script``: the source of an EVALSHA,
    loaded when a server answers NOSCRIPT."""

    key: str
    args: tuple[Arg, ...]
    script: str | None = None


def packed(commands: Sequence[Command]) -> bytes:
    """The commands as one write, in RESP (packed in C)."""
    return b"".join(
        hiredis.pack_command(cast(Any, command.args)) for command in commands
    )  # (its stub: 1-tuples)


class LinkBroken(RedisConnectionError):
    """The link failed; the round may be sent again on a new one."""


class Link:
    """One borrowed connection, shared by many rounds at once (see the module's note)."""

    def __init__(
        self, connection: AbstractConnection, give_back: Callable[[AbstractConnection], Awaitable[None]]
    ):
        self._connection, self._give_back = connection, give_back
        self._timeout = connection.socket_timeout  # a round's bound; the connection itself waits for replies
        connection.socket_timeout = None  # idle, the reading task waits as long as it takes
        self._waiting: collections.deque[asyncio.Future[Any]] = collections.deque()
        self._sending = asyncio.Lock()
        self._broken: BaseException | None = None
        self._loop = asyncio.get_running_loop()
        self._reading = self._loop.create_task(self._read())

    @classmethod
    async def open(
        cls, connection: AbstractConnection, give_back: Callable[[AbstractConnection], Awaitable[None]]
    ) -> Link:
        """A link on ``connection`` (connected here if it is not), given back with ``give_back``."""
        try:
            await connection.connect()  # type: ignore[no-untyped-call]
        except BaseException:
            await give_back(connection)
            raise
        return cls(connection, give_back)

    @property
    def alive(self) -> bool:
        """Not broken, and of the running event loop (a client may outlive a loop, in tests)."""
        return self._broken is None and asyncio.get_running_loop() is self._loop

    async def exchange(self, commands: Sequence[Command]) -> list[Any]:
        """The replies to ``commands``, sent in one write (see ``answers``)."""
        return await self.answers(await self.send(commands))

    async def answers(self, futures: Sequence[asyncio.Future[Any]]) -> list[Any]:
        """The replies ``send`` promised: each the server's answer or, for an error reply, the
        ResponseError (MovedError, NoScriptError...) it stands for. A failure of the link raises
        (LinkBroken, or redis's TimeoutError when they take longer than the socket timeout)."""
        try:
            async with asyncio.timeout(self._timeout):
                return [await future for future in futures]
        except TimeoutError:
            self.breaks(RedisTimeoutError(f"no answer within {self._timeout} s"))
            raise RedisTimeoutError(f"Redis did not answer within {self._timeout} s") from None
        finally:
            settle(futures)

    async def send(self, commands: Sequence[Command]) -> list[asyncio.Future[Any]]:
        """Write ``commands``; a future per reply (``answers`` waits for them)."""
        loop = asyncio.get_running_loop()
        async with self._sending:  # a round's futures and its bytes go in the same order
            if self._broken is not None:
                raise LinkBroken(f"the link to Redis is broken: {self._broken!r}")
            futures = [loop.create_future() for _ in commands]
            self._waiting.extend(futures)
            try:
                await self._connection.send_packed_command(packed(commands), check_health=False)
            except BaseException as exc:  # maybe written in part: the replies would not line up
                settle(futures)
                self.breaks(exc)
                raise
        return futures

    def breaks(self, cause: BaseException) -> None:
        """Fail every waiting caller and close the link (its reading task gives the connection back)."""
        if self._broken is None:
            self._broken = cause
            if asyncio.current_task() is not self._reading:
                self._reading.cancel()
        while self._waiting:
            future = self._waiting.popleft()
            if not future.done():
                future.set_exception(LinkBroken(f"the link to Redis broke: {cause!r}"))

    async def close(self) -> None:
        self.breaks(LinkBroken("closed"))
        with contextlib.suppress(asyncio.CancelledError):
            await self._reading

    async def _read(self) -> None:
        connection = self._connection
        try:
            while True:
                try:
                    reply: Any = await connection.read_response(disconnect_on_error=False)
                except ResponseError as error:  # an error reply: the caller's answer
                    reply = error
                if not self._waiting:
                    raise LinkBroken("Redis answered a command nobody sent")
                future = self._waiting.popleft()
                if not future.done():  # (a caller that gave up leaves its reply unread)
                    future.set_result(reply)
        except (Exception, asyncio.CancelledError) as exc:  # lost, or broken: give the connection back
            self.breaks(exc)
            await connection.disconnect(nowait=True)
            connection.socket_timeout = self._timeout
            await self._give_back(connection)


def settle(futures: Sequence[asyncio.Future[Any]]) -> None:
    """Cancel the futures nobody will await now, and mark the failures of the others as seen."""
    for future in futures:
        if not future.done():
            future.cancel()
        elif not future.cancelled():
            future.exception()
