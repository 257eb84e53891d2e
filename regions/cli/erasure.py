"""``ops/lb erase-player``, ``ops/lb erasure`` and ``ops/lb lift-erasure``: erasing a player everywhere,
following it, and lifting it."""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime

from regions.actions.erase import lift_erasure, request_erasure
from regions.cli.command import CommandError, Commands, add_command, cassandra_session, say
from regions.core.erasure import parse_erasure, step_list
from regions.core.ids import user_id_error
from regions.runtime.settings import Settings
from regions.stores.cassandra.erasures import CassandraErasures, ErasureEntry
from schema.erasure import erasure_token

PROGRESS_EVERY_S = 10.0


def show(entry: ErasureEntry, settings: Settings, say: Callable[[str], None]) -> None:
    status = "LIFTED" if entry.lifted_at else "DONE" if entry.completed_at else "PENDING"
    say(f"erasure {entry.token}: {status}, asked in {entry.region} at {entry.requested_at:%Y-%m-%d %H:%M:%S}"
        + (f", done at {entry.completed_at:%Y-%m-%d %H:%M:%S}" if entry.completed_at else ""))  # fmt: skip
    for step in step_list(entry.steps, settings.region_names()):
        say(f"  {step.store:<24} {step.status:<8} {step.detail}")


def _user(value: str) -> str:
    problem = user_id_error(value)
    if problem is not None:
        raise CommandError(f"user: {problem}")
    return value


async def _erase(settings: Settings, args: argparse.Namespace) -> int:
    request = parse_erasure(args.user, args.reason)
    if isinstance(request, list):
        raise CommandError("; ".join(f"{e.field}: {e.rule}" for e in request))
    async with cassandra_session(settings) as session:
        erasures = CassandraErasures(session)
        entry = await request_erasure(erasures, request, region=settings.region, now=datetime.now(UTC))
        say(f"recorded; this region's lifecycle worker carries it out ('ops/lb erasure {args.user}' follows it)")
        began, shown, shown_at = time.monotonic(), "", 0.0
        while True:
            lines: list[str] = []
            show(entry, settings, lines.append)
            text = "\n".join(lines)
            if text != shown or time.monotonic() - shown_at > PROGRESS_EVERY_S:
                for line in lines:
                    say(line)
                shown, shown_at = text, time.monotonic()
            if entry.completed_at is not None or entry.lifted_at is not None or args.no_wait:
                return 0
            if time.monotonic() - began > args.wait:
                say(f"not DONE within {args.wait:g} s; it goes on without this command. Is 'python -m "
                    "regions.lifecycle' running in this region? 'ops/lb erasure USER' shows it")  # fmt: skip
                return 1
            await asyncio.sleep(1.0)
            entry = await erasures.get(entry.token) or entry


async def _status(settings: Settings, args: argparse.Namespace) -> int:
    async with cassandra_session(settings) as session:
        entry = await CassandraErasures(session).get(erasure_token(_user(args.user)))
    if entry is None:
        say(f"{args.user}: no erasure asked")
        return 1
    show(entry, settings, say)
    return 0


async def _lift(settings: Settings, args: argparse.Namespace) -> int:
    async with cassandra_session(settings) as session:
        entry = await lift_erasure(CassandraErasures(session), _user(args.user), region=settings.region,
                                   now=datetime.now(UTC))  # fmt: skip
    say(f"erasure {entry.token} lifted: the intakes take the player's awards again within "
        f"{settings.intake.erasure_refresh_s:g} s, and the processors once this region's lifecycle worker told them")  # fmt: skip
    return 0


def register(commands: Commands) -> None:
    erase = add_command(commands, "erase-player", _erase, "erase a player from every board, region and store")
    erase.add_argument("user")
    erase.add_argument("--reason", required=True, help="why (kept with the erasure)")
    erase.add_argument("--wait", type=float, default=600.0, help="seconds to follow it (default 600)")
    erase.add_argument("--no-wait", action="store_true", help="return once it is recorded")
    status = add_command(commands, "erasure", _status, "a player's erasure and how far each store is")
    status.add_argument("user")
    lift = add_command(commands, "lift-erasure", _lift, "lift a player's erasure: their new awards count again")
    lift.add_argument("user")
