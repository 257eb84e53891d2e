"""The operator's command line: ``python -m regions.cli <command>`` (also ``ops/lb``)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from regions.bootstrap import bootstrap
from regions.settings import Settings, load_settings


def _bootstrap(settings: Settings, _: argparse.Namespace) -> int:
    print(
        f"bootstrapping Kafka at {settings.kafka.bootstrap_servers} "
        f"and Cassandra keyspace {settings.cassandra.keyspace} ...",
        flush=True,
    )
    report = asyncio.run(bootstrap(settings))
    print(f"  topics created: {', '.join(report.topics_created) or 'none (all present)'}")
    print(f"  migrations applied: {', '.join(report.migrations_applied) or 'none (up to date)'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lb", description="Operate a leaderboard region.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("bootstrap", help="create topics and apply CQL migrations (re-runnable)")
    return parser


COMMANDS = {"bootstrap": _bootstrap}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = load_settings()
    return COMMANDS[args.command](settings, args)


if __name__ == "__main__":
    sys.exit(main())
