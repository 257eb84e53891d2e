"""The operator's command line: ``ops/lb <command>`` (``python -m regions.cli``)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from regions.bootstrap import bootstrap
from regions.cassandra_catalog import CassandraCatalog
from regions.cassandra_store import connect
from regions.core.boards import Aggregation, Board, InvalidBoardError, SortOrder, TiePolicy
from regions.kafka_clients import TopicMissing
from regions.projector.command import rebuild_command
from regions.settings import Settings, load_settings


async def _bootstrap(settings: Settings, _: argparse.Namespace) -> int:
    print(
        f"bootstrapping Kafka at {settings.kafka.bootstrap_servers} and Cassandra keyspace {settings.cassandra.keyspace} ...",
        flush=True,
    )
    report = await bootstrap(settings)
    print(f"  topics created: {', '.join(report.topics_created) or 'none (all present)'}")
    print(f"  migrations applied: {', '.join(report.migrations_applied) or 'none (up to date)'}")
    return 0


async def _create_board(settings: Settings, args: argparse.Namespace) -> int:
    try:
        board = Board(
            id=args.id, name=args.name or args.id, home_region=args.home_region or settings.region,
            sort_order=SortOrder(args.sort_order), aggregation=Aggregation(args.aggregation),
            tie_policy=TiePolicy(args.tie_policy),
        )  # fmt: skip
    except InvalidBoardError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cluster, session = connect(settings.cassandra)
    try:
        created = await CassandraCatalog(session).create(board)
    finally:
        cluster.shutdown()
    print(f"board {board.id} {'created' if created else 'already exists (unchanged)'}")
    return 0


async def _boards(settings: Settings, _: argparse.Namespace) -> int:
    cluster, session = connect(settings.cassandra)
    try:
        for b in sorted(await CassandraCatalog(session).all(), key=lambda b: b.id):
            print(
                f"{b.id:30} {b.status:8} {b.aggregation:4} {b.sort_order:4} {b.tie_policy:14} home={b.home_region}"
            )
    finally:
        cluster.shutdown()
    return 0


async def _rebuild(settings: Settings, args: argparse.Namespace) -> int:
    return await rebuild_command(settings, args.board, lambda line: print(line, flush=True))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lb", description="Operate a leaderboard region.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("bootstrap", help="create topics and apply CQL migrations (re-runnable)")
    create = commands.add_parser("create-board", help="add a board to the catalog")
    create.add_argument("id")
    create.add_argument("--name")
    create.add_argument("--home-region")
    create.add_argument("--sort-order", choices=[s.value for s in SortOrder], default="DESC")
    create.add_argument("--aggregation", choices=[a.value for a in Aggregation], default="SUM")
    create.add_argument("--tie-policy", choices=[t.value for t in TiePolicy], default="USER_ID")
    commands.add_parser("boards", help="list the board catalog")
    rebuild_cmd = commands.add_parser(
        "rebuild", help="rebuild the Redis projection from Kafka and swap it in"
    )
    rebuild_cmd.add_argument("--board", help="only this board (default: all boards)")
    return parser


COMMANDS: dict[str, Callable[[Settings, argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "bootstrap": _bootstrap,
    "create-board": _create_board,
    "boards": _boards,
    "rebuild": _rebuild,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return asyncio.run(COMMANDS[args.command](load_settings(), args))
    except TopicMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
