"""The erasure list as the intake holds it: the tokens of every erased player, read again every
``intake.erasure_refresh_s`` (a read that fails keeps the list it has and is tried again)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from regions.runtime.logs import ThrottledLog

log = logging.getLogger(__name__)


class ErasureList:
    def __init__(self, load: Callable[[], Awaitable[frozenset[str]]], interval_s: float) -> None:
        self.tokens: frozenset[str] = frozenset()
        self._load, self._interval_s = load, interval_s
        self._errors = ThrottledLog(log, interval_s=60)

    async def run(self) -> None:
        """Read the list now and every interval, until cancelled."""
        while True:
            try:
                self.tokens = await self._load()
            except Exception as exc:  # Cassandra away: the list read last stays
                self._errors.log(logging.WARNING, "erasures", "erasure list not read (%r); keeping %d tokens",
                                 exc, len(self.tokens))  # fmt: skip
            await asyncio.sleep(self._interval_s)
