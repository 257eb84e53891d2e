"""``ops/lb rebuild [--board B]``: ask the running projector to rebuild, or rebuild here without one.

The projector that holds the projection's write lease takes the request at its next tick and
records its progress, which this command prints. When no projector holds the lease (or the one that
did goes away before finishing), the command takes the lease and runs the rebuild itself; a
projector starting meanwhile waits for it.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable

from regions.projector.rebuild import rebuild
from regions.projector.redis_control import (
    Lease,
    ProjectionControl,
    RebuildCause,
    RebuildRequest,
    RebuildState,
)
from regions.redis_projection import RedisProjection, connect_redis
from regions.settings import Settings

FOLLOW_EVERY_S = 0.5


class ProgressPrinter:
    """Prints a rebuild's progress as it is recorded: replay percentage by steps of 5, then the end."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._percent = -5
        self._state: RebuildState | None = None
        self._error = ""

    def show(self, request: RebuildRequest) -> None:
        if request.error != self._error:
            self._error = request.error
            if request.error:
                self._say(f"  the rebuild stopped ({request.error}); whoever holds the projection resumes it")
        past_replay = request.state in (RebuildState.CATCHING_UP, RebuildState.SWAPPING, RebuildState.DONE)
        if (request.state is RebuildState.REPLAYING and request.total) or past_replay:
            percent = 100 * request.done // request.total if request.total else 100
            if percent >= self._percent + 5 or (past_replay and self._percent < 100):
                self._percent = percent
                self._say(f"  replayed {request.done:,} of {request.total:,} totals offsets ({percent}%)")
        if request.state is self._state:
            return
        self._state = request.state
        if request.state is RebuildState.CATCHING_UP:
            self._say("  catching up with the newest totals, then swapping the fresh keys in")
        elif request.state is RebuildState.DONE:
            self._say(
                f"rebuilt {request.boards} board(s) from {request.records:,} offsets of totals and swapped them in"
            )


async def rebuild_command(settings: Settings, board: str | None, say: Callable[[str], None]) -> int:
    redis = connect_redis(settings.redis)
    prefix = settings.redis.key_prefix
    projection, control = RedisProjection(redis, prefix), ProjectionControl(redis, prefix)
    lease = Lease(
        control, f"ops/lb rebuild on {socket.gethostname()} pid {os.getpid()}", settings.projector.lease_ttl_s
    )
    printer = ProgressPrinter(say)
    try:
        if not await lease.try_acquire():
            asked = await control.ask_rebuild(RebuildRequest.new(RebuildCause.REQUESTED, board))
            say(
                f"asked {await control.lease_holder()} to rebuild (request {asked.id}); following its progress"
            )
            if await _follow(control, lease, asked, printer, say):
                return 0
            if not lease.held:
                return 1
            say("no projector holds the projection any more: rebuilding here")
        else:
            say("no projector is running: rebuilding here (a projector that starts meanwhile waits)")
        await rebuild(settings, projection, board, show=printer.show)
        return 0
    finally:
        await lease.release()
        await redis.aclose()


async def _follow(
    control: ProjectionControl,
    lease: Lease,
    request: RebuildRequest,
    printer: ProgressPrinter,
    say: Callable[[str], None],
) -> bool:
    """Print the request's progress until it is done (True); False when it vanished, or when its
    holder went away, in which case the lease is now ours and the caller resumes the rebuild."""
    while True:
        current = await control.rebuild()
        if current is None or (current.id != request.id and current.cause is not RebuildCause.LOST):
            say(
                "error: the rebuild request is gone (did Redis lose the projection?); see the projector's log"
            )
            return False
        if current.id != request.id:
            say("the projection was lost meanwhile: following the rebuild of every board that replaces it")
            request = current
        printer.show(current)
        if not current.active:
            return True
        if await lease.try_acquire():
            return False
        await asyncio.sleep(FOLLOW_EVERY_S)
