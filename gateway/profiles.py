"""Profiles for reads, guarded: a lookup has a time budget and a circuit breaker.

When the profile store is slow or down, reads still answer with ids and scores; the profiles are
then null. Lookups are batched per request by a DataLoader.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from strawberry.dataloader import DataLoader

from gateway import metrics
from gateway.cassandra_profiles import ProfileRecord
from gateway.core.breaker import CircuitBreaker

log = logging.getLogger(__name__)


class ProfileStore(Protocol):
    async def get_many(self, user_ids: Sequence[str]) -> dict[str, ProfileRecord]: ...


ProfileLoader = DataLoader[str, ProfileRecord | None]


class GuardedProfiles:
    def __init__(
        self,
        store: Callable[[], ProfileStore],
        timeout_s: float,
        breaker: CircuitBreaker,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._timeout_s = timeout_s
        self.breaker = breaker
        self._clock = clock

    async def lookup(self, user_ids: list[str]) -> list[ProfileRecord | None]:
        """Profiles in key order; all None when the store is skipped, slow or failing."""
        if not self.breaker.allow(self._clock()):
            metrics.PROFILE_LOOKUPS.labels("skipped").inc()
            return [None] * len(user_ids)
        try:
            found = await asyncio.wait_for(
                self._store().get_many(list(dict.fromkeys(user_ids))), self._timeout_s
            )
        except TimeoutError:
            return self._failed(user_ids, "timeout")
        except Exception as exc:  # any failure of the store degrades to null profiles
            log.warning("profile lookup failed: %r", exc)
            return self._failed(user_ids, "error")
        self.breaker.succeeded()
        metrics.PROFILE_LOOKUPS.labels("ok").inc()
        return [found.get(u) for u in user_ids]

    def _failed(self, user_ids: list[str], outcome: str) -> list[ProfileRecord | None]:
        self.breaker.failed(self._clock())
        metrics.PROFILE_LOOKUPS.labels(outcome).inc()
        return [None] * len(user_ids)

    def loader(self, cache: bool) -> ProfileLoader:
        """A DataLoader for one request (``cache=False`` for a WebSocket, whose context lives long)."""
        return DataLoader(load_fn=self.lookup, cache=cache)
