"""A service's runs restarted after recoverable errors (``regions.runtime.worker.keep_running``): the
wait doubles from 1 s up to 30 s while runs keep failing at once, starts over after a run that had
been working for a minute, and an error it cannot recover from ends the service."""

from __future__ import annotations

import asyncio

import pytest

from regions.runtime.worker import keep_running


class Broken(Exception):
    pass


def _restarts(lasted_s: list[float], error: type[Exception] = Broken) -> tuple[list[float], int]:
    """Runs that each last ``lasted_s[i]`` (on a clock of the test's) and then fail with ``error``;
    the waits asked for before each rerun, and the runs made. The last run sets ``stop``."""
    now, waits, runs = [0.0], [], [0]
    stop = asyncio.Event()

    async def run(_: asyncio.Event) -> None:
        now[0] += lasted_s[runs[0]]
        runs[0] += 1
        if runs[0] == len(lasted_s):
            stop.set()
        raise error("broken")

    async def pause(_: asyncio.Event, seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    asyncio.run(keep_running("test", run, (Broken,), stop, pause=pause, clock=lambda: now[0]))
    return waits, runs[0]


def test_the_wait_doubles_up_to_thirty_seconds_while_runs_fail_at_once() -> None:
    waits, runs = _restarts([0.5] * 8)
    assert waits == [1, 2, 4, 8, 16, 30, 30, 30] and runs == 8


def test_a_run_that_had_worked_for_a_minute_starts_the_waits_over() -> None:
    waits, _ = _restarts([0.5] * 6 + [600.0, 0.5, 0.5, 59.0])
    assert waits == [1, 2, 4, 8, 16, 30, 1, 2, 4, 8]


def test_an_error_it_cannot_recover_from_ends_the_service() -> None:
    with pytest.raises(ValueError):
        _restarts([0.5, 0.5], ValueError)
