"""Profiles for reads: batched per request, shared between requests, guarded by a time budget and
a circuit breaker, and never silently missing.

Why profiles went null under load: the store's answer reaches a request only when the event loop
(and the driver's thread, through the GIL) gets to it, so while another big page is being resolved
a 100-id lookup that Cassandra answers in 20 ms took 100-200 ms; past the budget every profile of
the page was null, and three such timeouts in a row opened the breaker for everyone. So:

- a request waits for its profiles up to the budget, but the lookup is not abandoned: when it ends
  it fills a short-lived cache, so the next read of the same players has them, and it tells the
  breaker the store answered (late is slow, not down);
- concurrent requests for the same players share one lookup (hot top-K pages are the same ids);
- a profile that could not be read is ``UNAVAILABLE``, not None: the response carries a
  ``STORE_UNAVAILABLE`` warning, a metric counts it and a rate-limited log line says why.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Literal, Protocol

from strawberry.dataloader import DataLoader

from gateway import metrics
from gateway.core.breaker import BreakerState, CircuitBreaker
from gateway.core.ttl_cache import TtlCache
from regions.runtime.logs import ThrottledLog
from regions.stores.cassandra.profiles import ProfileRecord

log = logging.getLogger(__name__)


class ProfileStore(Protocol):
    async def get_many(self, user_ids: Sequence[str]) -> dict[str, ProfileRecord]: ...


class _Unavailable(Enum):
    UNAVAILABLE = "unavailable"


UNAVAILABLE = _Unavailable.UNAVAILABLE
Unavailable = Literal[_Unavailable.UNAVAILABLE]
Looked = ProfileRecord | None | Unavailable  # a profile, no profile, or the store could not say
ProfileLoader = DataLoader[str, Looked]


class GuardedProfiles:
    def __init__(
        self,
        store: Callable[[], ProfileStore],
        timeout_s: float,
        breaker: CircuitBreaker,
        cache_ttl_s: float = 5.0,
        cache_entries: int = 50_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._timeout_s = timeout_s
        self.breaker = breaker
        self._cache: TtlCache[str, tuple[ProfileRecord | None]] = TtlCache(cache_ttl_s, cache_entries)
        self._inflight: dict[str, asyncio.Future[Looked]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._clock = clock
        self._errors = ThrottledLog(log, interval_s=10.0, clock=clock)

    async def lookup(self, user_ids: list[str]) -> list[Looked]:
        """Profiles in key order; ``UNAVAILABLE`` where the store is skipped, slow or failing."""
        now = self._clock()
        known: dict[str, Looked] = {}
        waiting: dict[str, asyncio.Future[Looked]] = {}
        missing: list[str] = []
        for user in dict.fromkeys(user_ids):
            cached = self._cache.get(user, now)
            if cached is not None:
                known[user] = cached[0]
            elif user in self._inflight:
                waiting[user] = self._inflight[user]
            else:
                missing.append(user)
        if missing and not self.breaker.allow(now):
            self._degraded("skipped", len(missing))
            known.update(dict.fromkeys(missing, UNAVAILABLE))
        elif missing:
            waiting.update(self._fetch(missing))
        if waiting:
            await asyncio.wait(waiting.values(), timeout=self._timeout_s)
            known.update({u: f.result() if f.done() else UNAVAILABLE for u, f in waiting.items()})
        answers = [known[u] for u in user_ids]
        unavailable = sum(a is UNAVAILABLE for a in answers)
        if unavailable:
            metrics.PROFILES_UNAVAILABLE.inc(unavailable)
        return answers

    def _fetch(self, user_ids: list[str]) -> dict[str, asyncio.Future[Looked]]:
        """Start one lookup that runs to its end whoever waits for it."""
        loop = asyncio.get_running_loop()
        futures: dict[str, asyncio.Future[Looked]] = {u: loop.create_future() for u in user_ids}
        self._inflight.update(futures)
        task = asyncio.create_task(self._run_fetch(futures))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return futures

    async def _run_fetch(self, futures: dict[str, asyncio.Future[Looked]]) -> None:
        started = self._clock()
        call = asyncio.ensure_future(self._get_many(list(futures)))
        try:
            if not (await asyncio.wait({call}, timeout=self._timeout_s))[0]:
                self.breaker.failed(self._clock())  # a store this slow counts as failing while it is
                self._degraded("timeout", len(futures))
            results = await self._answers(call, futures)
        finally:
            for user in futures:
                self._inflight.pop(user, None)
        metrics.PROFILE_LOOKUP_SECONDS.observe(self._clock() - started)
        for user, future in futures.items():
            future.set_result(results[user])

    async def _get_many(self, user_ids: list[str]) -> dict[str, ProfileRecord]:
        return await self._store().get_many(user_ids)

    async def _answers(
        self, call: asyncio.Future[dict[str, ProfileRecord]], futures: dict[str, asyncio.Future[Looked]]
    ) -> dict[str, Looked]:
        try:
            found = await call
        except Exception as exc:  # any failure of the store degrades to unavailable profiles
            self.breaker.failed(self._clock())
            self._degraded("error", len(futures), exc)
            return dict.fromkeys(futures, UNAVAILABLE)
        self.breaker.succeeded()  # also when late: the store answers, only slowly
        metrics.PROFILE_LOOKUPS.labels("ok").inc()
        now = self._clock()
        for user in futures:
            self._cache.put(user, (found.get(user),), now)
        return {u: found.get(u) for u in futures}

    def _degraded(self, outcome: str, count: int, exc: Exception | None = None) -> None:
        metrics.PROFILE_LOOKUPS.labels(outcome).inc()
        metrics.PROFILE_BREAKER_OPEN.set(1 if self.breaker.state(self._clock()) is BreakerState.OPEN else 0)
        cause = "" if exc is None else f": {exc!r}"[:200]
        self._errors.log(logging.WARNING, outcome, "profile store degraded (%s%s): %d profiles answered "
                         "unavailable", outcome, cause, count)  # fmt: skip

    def store_is_back(self) -> None:
        """Cassandra is reachable again: stop skipping profiles now, not after the breaker's reset time."""
        self.breaker.succeeded()
        metrics.PROFILE_BREAKER_OPEN.set(0)

    def loader(self, cache: bool) -> ProfileLoader:
        """A DataLoader for one request (``cache=False`` for a WebSocket, whose context lives long)."""
        return DataLoader(load_fn=self.lookup, cache=cache)
