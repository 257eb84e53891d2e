"""``ops/lb hide``, ``ops/lb restore`` and ``ops/lb moderation``: taking a player off an open board,
showing them again, and the board's moderation log."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime

from cassandra.cluster import Session

from regions.actions.moderate import record_moderation
from regions.cli.command import Command, CommandError, Commands, add_command, cassandra_session, say
from regions.core.ids import board_id_error
from regions.core.moderation import MAX_PAGE, parse_moderation
from regions.runtime.settings import Settings
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.moderation import CassandraModeration, ModerationEntry


def describe(entry: ModerationEntry) -> str:
    return f"#{entry.sequence:<6} {entry.at:%Y-%m-%d %H:%M:%S}  {entry.action:<7} {entry.user_id}  ({entry.reason})"


async def moderate_command(
    settings: Settings, session: Session, board_id: str, user_id: str, reason: str, *, hidden: bool,
    say: Callable[[str], None],
) -> None:  # fmt: skip
    problem = board_id_error(board_id)
    if problem is not None:
        raise CommandError(f"board: {problem}")
    request = parse_moderation(board_id, user_id, reason, hidden=hidden)
    if isinstance(request, list):
        raise CommandError("; ".join(f"{e.field}: {e.rule}" for e in request))
    entry = await record_moderation(CassandraLifecycle(session), CassandraModeration(session), request,
                                    region=settings.region, now=datetime.now(UTC))  # fmt: skip
    say(f"{board_id}: {describe(entry)}")
    say("  recorded; the home lifecycle worker writes it into the awards topic and every region applies it "
        f"('ops/lb moderation {board_id}' shows the log)")  # fmt: skip


async def log_command(session: Session, board_id: str, first: int, after: int, say: Callable[[str], None]) -> None:
    entries = await CassandraModeration(session).page(board_id, after, first)
    if not entries:
        say(f"{board_id}: no moderation actions" + (f" after #{after}" if after else ""))
    for entry in entries:
        say(describe(entry))
    if len(entries) == first:
        say(f"(more: --after {entries[-1].sequence})")


def _moderate(hidden: bool) -> Command:
    async def run(settings: Settings, args: argparse.Namespace) -> int:
        async with cassandra_session(settings) as session:
            await moderate_command(settings, session, args.board, args.user, args.reason, hidden=hidden, say=say)
        return 0

    return run


async def _log(settings: Settings, args: argparse.Namespace) -> int:
    if not 1 <= args.first <= MAX_PAGE:
        raise CommandError(f"--first: must be 1..{MAX_PAGE}, got {args.first}")
    async with cassandra_session(settings) as session:
        await log_command(session, args.board, args.first, args.after, say)
    return 0


def register(commands: Commands) -> None:
    for name, hidden, summary in (
        ("hide", True, "hide a player's entry on a board in every region (in its home region)"),
        ("restore", False, "show a hidden player's entry again, with every award applied meanwhile"),
    ):
        command = add_command(commands, name, _moderate(hidden), summary)
        command.add_argument("board")
        command.add_argument("user")
        command.add_argument("--reason", required=True, help="why (kept in the board's moderation log)")
    log = add_command(commands, "moderation", _log, "a board's moderation log, oldest first")
    log.add_argument("board")
    log.add_argument("--first", type=int, default=50, help=f"actions to show (1..{MAX_PAGE}, default 50)")
    log.add_argument("--after", type=int, default=0, help="show those after this sequence (default 0)")
