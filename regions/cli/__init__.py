"""The operator's command line: ``ops/lb <command>`` (``python -m regions.cli``); ``ops/award`` is its
``award`` command. Failures are one clear line on stderr and a non-zero exit, never a traceback.

Each module holds a group of commands and registers them (``register``); this one reads the command
line, loads the settings and runs the command."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable

from aiokafka.errors import KafkaConnectionError
from pydantic import ValidationError

from regions.actions.home import ActionRefused
from regions.cli import (
    awards,
    boards,
    bootstrap,
    erasure,
    lifecycle,
    moderation,
    players,
    projection,
    reconciliation,
)
from regions.cli.command import Command, CommandError, Commands
from regions.core.redaction import redact
from regions.runtime.settings import UnknownSettingsError, describe_refusal, load_settings
from regions.stores.cassandra.session import CassandraUnavailable
from regions.stores.kafka.clients import TopicMissing
from regions.stores.kafka.topics import PartitionsMismatch

#: The groups of commands, in the order ``lb --help`` lists them.
GROUPS: tuple[Callable[[Commands], None], ...] = (
    bootstrap.register,
    boards.register,
    projection.register,
    reconciliation.register,
    lifecycle.register,
    moderation.register,
    erasure.register,
    players.register,
    awards.register,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lb", description="Operate a leaderboard region.")
    commands = parser.add_subparsers(dest="command", required=True)
    for register in GROUPS:
        register(commands)
    return parser


def parse_command(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line as ``build_parser`` reads it, except that ``correct`` takes its USER=SCORE
    adjustments after its options too (``correct BOARD --reason TEXT alice=10``), which argparse alone
    does not."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        if args.command != "correct" or any(e.startswith("-") for e in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.adjustments += extra
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_command(argv)
    try:
        settings = load_settings()
    except (UnknownSettingsError, ValidationError) as exc:
        print(f"error: settings refused: {describe_refusal(exc)}", file=sys.stderr)
        return 2
    run: Command = args.run
    # The command reports Kafka's failures itself, naming the fix; aiokafka's own log lines of them
    # (printed bare, as nothing here configures logging) would only say it twice.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    try:
        return asyncio.run(run(settings, args))
    except (TopicMissing, PartitionsMismatch, CassandraUnavailable, CommandError, ActionRefused) as exc:
        print(f"error: {redact(str(exc), settings.secret_values())}", file=sys.stderr)
        return 1
    except KafkaConnectionError as exc:
        print(
            f"error: Kafka at {settings.kafka.bootstrap_servers} is not reachable ({type(exc).__name__}). "
            "See 'ops/services status'; 'ops/services up' starts it.",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt:
        return 130
