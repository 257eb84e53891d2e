"""``ops/lb rebuild [--board B]`` and ``ops/lb reshard B --shards N``: ask the running projector to
rebuild (a reshard is a rebuild of one board into another number of shards), or do it here without one.

The projector that holds the projection's write lease takes the request at its next tick and
records its progress, which this command prints. When no projector holds the lease (or the one that
did goes away before finishing), the command takes the lease and runs the rebuild itself; a
projector starting meanwhile waits for it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from collections.abc import Callable

from regions.cli.command import CommandError, Commands, add_command, cassandra_session, say
from regions.core.boards import MAX_SHARDS, BoardStatus
from regions.projector.rebuild import rebuild
from regions.runtime.settings import Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.redis.control import (
    Lease,
    ProjectionControl,
    RebuildCause,
    RebuildRequest,
    RebuildState,
)
from regions.stores.redis.projection import RedisProjection, connect_redis

FOLLOW_EVERY_S = 0.5


class ProgressPrinter:
    """Prints a rebuild's progress as it is recorded: replay percentage by steps of 5, then the end."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._percent = -5
        self._state: RebuildState | None = None
        self._error = ""
        self._verified = -10

    def show(self, request: RebuildRequest) -> None:
        done = request.state is RebuildState.DONE
        if request.error != self._error:
            self._error = request.error
            if request.error and done:
                self._say(f"  refused: {request.error}")
            elif request.error:
                self._say(f"  the rebuild stopped ({request.error}); whoever holds the projection resumes it")
        past_replay = request.state in (RebuildState.CATCHING_UP, RebuildState.VERIFYING, RebuildState.SWAPPING,
                                        RebuildState.DONE)  # fmt: skip
        if (request.state is RebuildState.REPLAYING and request.total) or (
            past_replay and self._percent < 100
        ):
            percent = 100 * request.done // request.total if request.total else 100
            if percent >= self._percent + 5 or past_replay:
                self._percent = 100 if past_replay else percent
                shown = request.records if past_replay and request.records else request.done
                total = request.records if past_replay and request.records else request.total
                self._say(f"  replayed {shown:,} of {total:,} totals offsets ({self._percent}%)")
        if request.state is RebuildState.VERIFYING:
            percent = 100 * request.done // max(request.total, 1)
            if percent >= self._verified + 10:
                self._verified = percent
                self._say(
                    f"  verified the versions of {request.done:,} of {request.total:,} players ({percent}%)"
                )
        if request.state is self._state:
            return
        self._state = request.state
        if request.state is RebuildState.CATCHING_UP:
            self._say("  catching up with the newest totals, then swapping the fresh keys in")
        elif request.state is RebuildState.SWAPPING and request.cause is RebuildCause.RESHARD:
            self._say("  every version is in the new layout: switching the board to it")
        elif done and not request.error:
            line = f"rebuilt {request.boards} board(s) from {request.records:,} offsets of totals and swapped them in"
            if request.cause is RebuildCause.RESHARD:
                line += (f" ({request.board} now has {request.shards} shard(s); {request.verified:,} player(s) "
                         "verified at their version or newer)")  # fmt: skip
            self._say(line)


async def rebuild_command(settings: Settings, board: str | None, say: Callable[[str], None]) -> int:
    return await run_request(settings, RebuildRequest.new(RebuildCause.REQUESTED, board), say)


async def run_request(settings: Settings, wanted: RebuildRequest, say: Callable[[str], None]) -> int:
    """Have ``wanted`` run (by the projector, or here); 0 once it is done, 1 when it was refused or
    another one ran instead (the message says what to do)."""
    redis = connect_redis(settings.redis)
    prefix = settings.redis.key_prefix
    projection, control = RedisProjection(redis, prefix), ProjectionControl(redis, prefix)
    lease = Lease(
        control, f"ops/lb rebuild on {socket.gethostname()} pid {os.getpid()}", settings.projector.lease_ttl_s
    )
    printer = ProgressPrinter(say)
    try:
        if not await lease.try_acquire():
            asked = await control.ask_rebuild(wanted)
            say(
                f"asked {await control.lease_holder()} to rebuild (request {asked.id}); following its progress"
            )
            if await _follow(control, lease, asked, printer, say):
                return _outcome(await control.rebuild(), wanted, say)
            if not lease.held:
                return 1
            say("no projector holds the projection any more: rebuilding here")
        else:
            say("no projector is running: rebuilding here (a projector that starts meanwhile waits)")
        report = await rebuild(settings, projection, wanted.board or None, show=printer.show, wanted=wanted)
        if report.request != wanted.id and wanted.cause is RebuildCause.RESHARD:
            say("an earlier rebuild was in progress and is done: now the reshard")
            await rebuild(settings, projection, wanted.board or None, show=printer.show, wanted=wanted)
        return _outcome(await control.rebuild(), wanted, say)
    finally:
        await lease.release()
        await redis.aclose()


def _outcome(done: RebuildRequest | None, wanted: RebuildRequest, say: Callable[[str], None]) -> int:
    """A rebuild is done when the one in progress is; a reshard only when it ran itself."""
    if done is None:
        return 1
    if done.id != wanted.id and wanted.cause is RebuildCause.RESHARD:
        say("error: another rebuild was in progress and ran instead of the reshard; run the command again")
        return 1
    return 1 if done.error else 0


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


async def reshard_command(settings: Settings, board_id: str, shards: int, say: Callable[[str], None]) -> int:
    """Lay one board out in ``shards`` shards in this region's projection (the catalog says so
    already): a rebuild of the board into the new layout, verified and switched in one step."""
    redis = connect_redis(settings.redis)
    try:
        layout = await RedisProjection(redis, settings.redis.key_prefix).layouts.live_one(board_id)
    finally:
        await redis.aclose()
    if layout is not None and layout.shards == shards:
        say(f"board {board_id} is laid out in {shards} shard(s) already: nothing to do")
        return 0
    now = "no players projected yet" if layout is None else f"{layout.shards} shard(s) now"
    say(f"resharding board {board_id} into {shards} shard(s) ({now})")
    return await run_request(settings, RebuildRequest.new(RebuildCause.RESHARD, board_id, shards), say)


async def _rebuild(settings: Settings, args: argparse.Namespace) -> int:
    return await rebuild_command(settings, args.board, say)


async def _reshard(settings: Settings, args: argparse.Namespace) -> int:
    if not 1 <= args.shards <= MAX_SHARDS:
        print(f"error: --shards {args.shards}: must be 1..{MAX_SHARDS}", file=sys.stderr)
        return 2
    async with cassandra_session(settings) as session:
        catalog = CassandraCatalog(session)
        board = await catalog.get(args.board)
        if board is None:
            raise CommandError(f"no board {args.board!r} in the catalog ('ops/lb boards' lists them)")
        if board.status is not BoardStatus.OPEN:
            raise CommandError(
                f"board {board.id} is {board.status}: its projection is final, it is not resharded"
            )
        if board.shards != args.shards:  # awards accepted from now on say so: new projections follow it
            await catalog.set_shards(board.id, args.shards)
            say(f"catalog: board {board.id} has {args.shards} shard(s) (was {board.shards})")
    return await reshard_command(settings, board.id, args.shards, say)


def register(commands: Commands) -> None:
    rebuild_cmd = add_command(
        commands, "rebuild", _rebuild, "rebuild the Redis projection from Kafka and swap it in"
    )
    rebuild_cmd.add_argument("--board", help="only this board (default: all boards)")
    reshard = add_command(
        commands,
        "reshard",
        _reshard,
        "spread a board's players over another number of shards (this region's projection)",
    )
    reshard.add_argument("board")
    reshard.add_argument(
        "--shards", type=int, required=True, help=f"the new number of shards (1..{MAX_SHARDS})"
    )
