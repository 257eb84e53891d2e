"""Applies in flight to Redis while the next batch is prepared: a rebuild's replay prepares one batch's
calls on a worker thread while Redis applies the batches before, so that Redis and this client work
at the same time.

Versioned applies need no order, so several may be in flight at once; what each one covers is taken
up only once it and every one before it are applied, oldest first: a checkpoint made from what was
taken up holds only batches applied, in order.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, TypeVar

APPLYING = 2  # batches a replay has in flight to Redis: it reads the next while Redis applies them

T = TypeVar("T")
Apply = Coroutine[Any, Any, object]


class ApplyPipeline(Generic[T]):
    """Keeps up to ``depth`` applies in flight, each with the item it covers; ``applied(item)``
    runs for each one once it is applied, in the order they were sent."""

    def __init__(self, applied: Callable[[T], Awaitable[None]], depth: int = APPLYING) -> None:
        self._applied = applied
        self._depth = depth
        self._in_flight: collections.deque[tuple[asyncio.Future[object], T]] = collections.deque()

    async def send(self, prepare: Callable[[], Apply], item: T) -> None:
        """Prepare an apply on a worker thread (the event loop meanwhile sending the applies in
        flight and reading their answers), wait until fewer than ``depth`` are in flight, then
        send it."""
        applying = await asyncio.to_thread(prepare)
        try:
            while len(self._in_flight) >= self._depth:
                await self._settle()
        except BaseException:
            applying.close()
            raise
        self._in_flight.append((asyncio.ensure_future(applying), item))

    async def drain(self) -> None:
        """Wait until every apply in flight is applied, and taken up."""
        while self._in_flight:
            await self._settle()

    async def cancel(self) -> None:
        """Cancel the applies still in flight (after an error: they go with it)."""
        while self._in_flight:
            applying = self._in_flight.popleft()[0]
            applying.cancel()
            with contextlib.suppress(BaseException):
                await applying

    async def _settle(self) -> None:
        """Wait for the oldest apply, then take up what it covers."""
        applying, item = self._in_flight[0]
        await applying
        self._in_flight.popleft()
        await self._applied(item)
