"""Running a worker loop until SIGTERM/SIGINT, restarting it after errors it can recover from."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
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


async def run_until_stopped(
    name: str, run: Callable[[asyncio.Event], Awaitable[None]], recoverable: tuple[type[BaseException], ...]
) -> None:
    """Call ``run(stop)`` until a signal sets ``stop``; after a recoverable error, back off and rerun.

    Each run starts from durable state (Kafka offsets, the changelog), never from memory.
    """
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    delay = 1.0
    while not stop.is_set():
        try:
            await run(stop)
            delay = 1.0
        except recoverable as exc:
            log.warning("%s failed (%r); restarting from durable state in %.0fs", name, exc, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)


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
