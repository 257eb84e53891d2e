"""The cadence of rounds that commit a transaction each (regions/runtime/cadence.py)."""

from __future__ import annotations

import asyncio

import pytest

from regions.runtime import cadence
from regions.runtime.cadence import Cadence


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits a cadence asks for, instead of sleeping them."""
    asked: list[float] = []

    async def sleep(seconds: float) -> None:
        asked.append(seconds)

    monkeypatch.setattr(cadence.asyncio, "sleep", sleep)
    return asked


def test_a_round_with_work_is_followed_no_sooner_than_the_interval_after_it_began(waits: list[float]) -> None:
    async def run() -> None:
        c = Cadence(0.1)
        c.begin()
        await c.end(True)

    asyncio.run(run())
    assert len(waits) == 1
    assert 0.09 < waits[0] <= 0.1


def test_a_round_that_found_nothing_is_followed_at_once(waits: list[float]) -> None:
    async def run() -> None:
        c = Cadence(0.1)
        c.begin()
        await c.end(False)

    asyncio.run(run())
    assert waits == []


def test_a_round_longer_than_the_interval_waits_no_more(waits: list[float]) -> None:
    async def run() -> None:
        c = Cadence(0.1)
        c.begin()
        c._started -= 0.5  # the round took half a second
        await c.end(True)

    asyncio.run(run())
    assert waits == [0.0]


def test_an_interval_of_zero_never_waits(waits: list[float]) -> None:
    async def run() -> None:
        c = Cadence(0)
        c.begin()
        await c.end(True)

    asyncio.run(run())
    assert waits == []
