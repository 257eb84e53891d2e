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


def test_a_round_that_took_long_stretches_the_interval_to_four_times_its_length() -> None:
    c = Cadence(0.1, longest_s=0.4)
    c._started = 10.0
    assert c.next_start(10.01) == pytest.approx(10.1)  # quick: the interval
    assert c.next_start(10.05) == pytest.approx(10.2)  # 50 ms: 200 ms between starts
    assert c.next_start(10.2) == pytest.approx(10.4)  # up to the longest


def test_without_a_longest_interval_the_interval_never_stretches() -> None:
    c = Cadence(0.1)
    c._started = 10.0
    assert c.next_start(10.08) == pytest.approx(10.1)
    assert Cadence(0.1, longest_s=0.05).next_start(0.08) == pytest.approx(0.1)  # below the interval: none


def test_a_stretched_round_waits_the_rest_of_its_stretch(waits: list[float]) -> None:
    async def run() -> None:
        c = Cadence(0.1, longest_s=0.4)
        c.begin()
        c._started -= 0.05  # the round took 50 ms
        await c.end(True)

    asyncio.run(run())
    assert len(waits) == 1
    assert 0.149 < waits[0] < 0.16  # 200 ms after it began
