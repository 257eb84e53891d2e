"""How far behind the event loop runs (regions/runtime/loop_lag.py): the least lateness over a window."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from regions.runtime.loop_lag import LoopLag, loop_lag
from tests.harness import work


def test_one_late_tick_is_not_behind_but_a_whole_window_of_late_ticks_is() -> None:
    lag = LoopLag(window=4)
    lag.tick(0.5)  # one long pause: a garbage collection, a blocking call
    assert lag.behind_ms == 0
    for _ in range(4):
        lag.tick(0.03)
    assert 29 < lag.behind_ms < 31
    lag.tick(0.0)
    assert lag.behind_ms == 0


async def until(holds: Callable[[], bool]) -> None:
    for _ in range(3000):
        if holds():
            return
        await asyncio.sleep(0.01)
    raise TimeoutError("the condition did not hold within 30 s")


async def test_a_loop_kept_busy_runs_behind_and_one_watcher_serves_the_whole_loop() -> None:
    watcher = loop_lag()
    assert loop_lag() is watcher
    busy = asyncio.Event()

    async def hog() -> None:
        while not busy.is_set():
            work(0.02)
            await asyncio.sleep(0)

    hogging = asyncio.create_task(hog())
    try:
        await until(lambda: watcher.behind_ms > 10)
    finally:
        busy.set()
        await hogging
    await until(lambda: watcher.behind_ms < 5)  # on time again (a tick is never exactly on time)


async def test_the_watcher_rests_while_nobody_asks_and_wakes_with_an_empty_window() -> None:
    lag = LoopLag(window=4, rest_after_s=0.05)
    watching = asyncio.create_task(lag.watch())
    try:
        await until(lambda: lag.resting)
        for _ in range(4):
            lag.tick(0.03)  # a window that says behind, left from before the rest
        await asyncio.sleep(0.1)
        assert lag.resting
        assert 29 < lag.behind_ms < 31  # no tick replaced them while it rested
        await until(lambda: lag.behind_ms < 5)  # the read woke it, and the old window was emptied
        assert not lag.resting
    finally:
        watching.cancel()
