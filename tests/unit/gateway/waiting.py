"""Waiting in unit tests for state that the event loop's own timers and tasks change."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop run until ``condition`` holds (at most 5 s)."""
    async with asyncio.timeout(5):
        while not condition():  # noqa: ASYNC110  (polls plain state, not an event)
            await asyncio.sleep(0.001)
