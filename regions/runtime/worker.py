"""Running a worker loop until SIGTERM/SIGINT, restarting it after errors it can recover from."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, NoReturn

import uvloop
from pydantic import ValidationError

from regions.runtime.logs import LibraryNoise
from regions.runtime.settings import (
    Settings,
    UnknownSettingsError,
    UnsafeSettingsError,
    describe_refusal,
    load_settings,
)

log = logging.getLogger(__name__)


FIRST_DELAY_S, MAX_DELAY_S = 1.0, 30.0
HEALTHY_RUN_S = 60.0
"""A run that lasted this long before it failed had been working: its restart waits the first delay
again, not the longest one that earlier trouble (minutes or days before) left behind."""


async def run_until_stopped(
    name: str, run: Callable[[asyncio.Event], Awaitable[None]], recoverable: tuple[type[BaseException], ...]
) -> None:
    """Call ``run(stop)`` until a signal sets ``stop``; after a recoverable error, back off and rerun.

    Each run starts from durable state (Kafka offsets, the changelog), never from memory.
    """
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await keep_running(name, run, recoverable, stop)


async def keep_running(
    name: str,
    run: Callable[[asyncio.Event], Awaitable[None]],
    recoverable: tuple[type[BaseException], ...],
    stop: asyncio.Event,
    *,
    pause: Callable[[asyncio.Event, float], Awaitable[None]] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """``run(stop)`` again after each recoverable error, after 1 s, 2 s, 4 s ... up to 30 s, the
    delay starting over once a run had lasted ``HEALTHY_RUN_S``; until ``stop`` is set."""
    wait = pause or _pause
    delay = FIRST_DELAY_S
    while not stop.is_set():
        started = clock()
        try:
            await run(stop)
        except recoverable as exc:
            if clock() - started >= HEALTHY_RUN_S:
                delay = FIRST_DELAY_S
            log.warning("%s failed (%r); restarting from durable state in %.0fs", name, exc, delay)
            await wait(stop, delay)
            delay = min(delay * 2, MAX_DELAY_S)
        else:
            delay = FIRST_DELAY_S


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    """Wait ``seconds``, or less if ``stop`` is set meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


def run_process(service: str, main: Coroutine[Any, Any, None]) -> None:
    """Run a service's main coroutine on uvloop, with the platform's log format. Settings that are
    refused end the process with exit status 2 and the reason; Ctrl-C ends it quietly (status 130)."""
    _log_format(service)
    try:
        uvloop.run(main)
    except (UnknownSettingsError, UnsafeSettingsError, ValidationError) as exc:
        _refused(service, exc)
    except KeyboardInterrupt:
        sys.exit(130)


def lower_priority(niceness: int) -> None:
    """Add ``niceness`` to this process's CPU niceness (a service's ``niceness`` setting)."""
    if niceness:
        os.nice(niceness)


def process_settings(service: str) -> Settings:
    """The settings, read before a service starts its processes; refused ones end it as ``run_process`` does."""
    _log_format(service)
    try:
        return load_settings(service)
    except (UnknownSettingsError, UnsafeSettingsError, ValidationError) as exc:
        _refused(service, exc)


def _log_format(service: str) -> None:
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s {service} %(message)s")
    noise = LibraryNoise(("cassandra",))
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, LibraryNoise) for f in handler.filters):
            handler.addFilter(noise)


def _refused(service: str, exc: Exception) -> NoReturn:
    log.error("%s cannot start, its settings are refused: %s", service, describe_refusal(exc))
    sys.exit(2)
