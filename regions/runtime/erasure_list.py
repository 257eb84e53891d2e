"""The erasure list as the intakes and the audit sinks hold it: the tokens of every erased player
(``schema.erasure.erasure_token``), read again every ``intake.erasure_refresh_s`` (a read that fails
keeps the list it has and is tried again)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from regions.runtime.logs import ThrottledLog
from schema.erasure import erasure_token

log = logging.getLogger(__name__)


class ErasureList:
    def __init__(self, load: Callable[[], Awaitable[frozenset[str]]], interval_s: float) -> None:
        self.tokens: frozenset[str] = frozenset()
        self._load, self._interval_s = load, interval_s
        self._errors = ThrottledLog(log, interval_s=60)

    def has(self, user_id: str) -> bool:
        return bool(self.tokens) and erasure_token(user_id) in self.tokens

    async def run(self) -> None:
        """Read the list now and every interval, until cancelled."""
        while True:
            try:
                self.tokens = await self._load()
            except Exception as exc:  # Cassandra away: the list read last stays
                self._errors.log(logging.WARNING, "erasures", "erasure list not read (%r); keeping %d tokens",
                                 exc, len(self.tokens))  # fmt: skip
            await asyncio.sleep(self._interval_s)


async def after(ready: asyncio.Event, work: Callable[[], Awaitable[None]]) -> None:
    """Run ``work`` once ``ready`` is set (the erasure list once Cassandra is connected)."""
    await ready.wait()
    await work()
