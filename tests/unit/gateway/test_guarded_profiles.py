"""The profile guard with an in-process store the test answers by hand (no sockets, no clock)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from gateway.core.breaker import BreakerState, CircuitBreaker
from gateway.profiles import UNAVAILABLE, GuardedProfiles
from regions.stores.cassandra.profiles import ProfileRecord
from tests.unit.gateway.waiting import until


class HandStore:
    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.answer = asyncio.Event()
        self.fail: Exception | None = None

    async def get_many(self, user_ids: Sequence[str]) -> dict[str, ProfileRecord]:
        self.calls.append(list(user_ids))
        await self.answer.wait()
        if self.fail is not None:
            raise self.fail
        return {u: ProfileRecord(u, f"P {u}") for u in user_ids if u != "ghost"}


def guard(store: HandStore, timeout_s: float = 0.05, threshold: int = 3) -> GuardedProfiles:
    return GuardedProfiles(lambda: store, timeout_s, CircuitBreaker(threshold, 600.0), cache_ttl_s=600)


async def test_concurrent_lookups_of_the_same_players_share_one_store_call() -> None:
    store = HandStore()
    profiles = guard(store, timeout_s=5)
    first = asyncio.create_task(profiles.lookup(["a", "b"]))
    await asyncio.sleep(0)
    second = asyncio.create_task(profiles.lookup(["b", "c", "ghost"]))
    await asyncio.sleep(0)
    store.answer.set()

    assert await first == [ProfileRecord("a", "P a"), ProfileRecord("b", "P b")]
    assert await second == [ProfileRecord("b", "P b"), ProfileRecord("c", "P c"), None]
    assert store.calls == [["a", "b"], ["c", "ghost"]]


async def test_past_the_budget_the_answer_is_unavailable_and_the_late_answer_is_kept() -> None:
    store = HandStore()
    profiles = guard(store, threshold=1)

    assert await profiles.lookup(["a"]) == [UNAVAILABLE]
    await until(lambda: profiles.breaker.state(0) is BreakerState.OPEN)  # the lookup's own budget ran out
    store.answer.set()

    await until(lambda: profiles.breaker.state(0) is BreakerState.CLOSED)  # the store answered, only late
    assert await profiles.lookup(["a"]) == [ProfileRecord("a", "P a")]
    assert len(store.calls) == 1


async def test_a_failing_store_opens_the_breaker_until_the_store_is_back() -> None:
    store = HandStore()
    store.fail, store.answer = ConnectionError("down"), asyncio.Event()
    store.answer.set()
    profiles = guard(store, threshold=2)
    for _ in range(2):
        assert await profiles.lookup(["a"]) == [UNAVAILABLE]

    assert await profiles.lookup(["a"]) == [UNAVAILABLE]
    assert len(store.calls) == 2  # skipped while open
    store.fail = None
    profiles.store_is_back()
    assert await profiles.lookup(["a"]) == [ProfileRecord("a", "P a")]


async def test_a_cancelled_request_does_not_strand_the_breakers_trial() -> None:
    store = HandStore()
    profiles = guard(store, timeout_s=5, threshold=1)
    profiles.breaker.failed(now=-1000.0)  # open long ago: the next call is the half-open trial
    request = asyncio.create_task(profiles.lookup(["a"]))
    await asyncio.sleep(0)
    request.cancel()
    store.answer.set()

    await until(lambda: profiles.breaker.state(0) is BreakerState.CLOSED)
    assert not profiles.breaker.trial_running
