"""The rebuild's pipelining: applies in flight at most ``depth`` at a time, each taken up once it and
every one before it are applied, oldest first; an error stops the pipeline and loses no ordering."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from regions.projector.pipeline import ApplyPipeline


async def test_applies_are_taken_up_in_the_order_sent_whatever_order_they_finish() -> None:
    taken: list[int] = []
    in_flight = most = 0
    delays = [0.03, 0.0, 0.02, 0.0, 0.01, 0.0]

    async def taken_up(item: int) -> None:
        taken.append(item)

    def prepare(delay: float) -> Callable[[], Coroutine[Any, Any, None]]:
        async def apply() -> None:
            nonlocal in_flight, most
            in_flight += 1
            most = max(most, in_flight)
            await asyncio.sleep(delay)
            in_flight -= 1

        return lambda: apply()

    pipeline: ApplyPipeline[int] = ApplyPipeline(taken_up, depth=2)
    for item, delay in enumerate(delays):
        await pipeline.send(prepare(delay), item)
        assert taken == list(range(len(taken)))  # only a prefix of what was sent is ever taken up
    await pipeline.drain()

    assert taken == list(range(len(delays)))
    assert most == 2


async def test_a_failed_apply_is_raised_and_nothing_after_it_is_taken_up() -> None:
    taken: list[int] = []

    async def taken_up(item: int) -> None:
        taken.append(item)

    async def fails() -> None:
        raise ConnectionError("redis went away")

    started = asyncio.Event()

    async def slow() -> None:
        started.set()
        await asyncio.sleep(30)

    pipeline: ApplyPipeline[int] = ApplyPipeline(taken_up, depth=2)
    await pipeline.send(lambda: fails(), 0)
    await pipeline.send(lambda: slow(), 1)
    with pytest.raises(ConnectionError):
        await pipeline.drain()
    await started.wait()
    await asyncio.wait_for(pipeline.cancel(), 5)  # the slow apply is cancelled, not awaited

    assert taken == []
