"""The operator's command line: ``ops/lb <command>`` (``python -m regions.cli``); ``ops/award`` is its
``award`` command. Failures are one clear line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from datetime import UTC, datetime
from typing import Any

import httpx
from cassandra import DriverException
from cassandra.cluster import Session
from pydantic import ValidationError
from redis.exceptions import RedisError

from regions.actions.close import CloseRefused
from regions.actions.correct import CorrectionRefused
from regions.cli.bootstrap import bootstrap
from regions.cli.lifecycle import close_command, correct_command, results_command
from regions.cli.projection import rebuild_command, reshard_command
from regions.cli.reconciliation import ReconciliationReader
from regions.core.boards import (
    MAX_SHARDS,
    Aggregation,
    Board,
    BoardStatus,
    InvalidBoardError,
    SortOrder,
    TiePolicy,
)
from regions.core.corrections import parse_correction
from regions.core.ids import board_id_error
from regions.core.periods import InvalidWindow, Period, Weekday, WindowSpec
from regions.core.profiles import InvalidProfileError, Profile
from regions.core.redaction import mask_url, redact
from regions.core.windows import describe_window, encode_window
from regions.intake.client import AwardClient, describe_answer
from regions.runtime.settings import Settings, UnknownSettingsError, describe_refusal, load_settings
from regions.stores.cassandra.catalog import CassandraCatalog, CatalogEntry
from regions.stores.cassandra.profiles import CassandraProfiles
from regions.stores.cassandra.session import CASSANDRA_ERRORS, CassandraUnavailable, connect, describe
from regions.stores.kafka.clients import TopicMissing


class CommandError(Exception):
    """What went wrong, for the operator: printed as ``error: ...``, exit status 1."""


@contextlib.asynccontextmanager
async def _cassandra(settings: Settings) -> AsyncIterator[Session]:
    """A session for one command; Cassandra being away is a ``CassandraUnavailable`` that says where."""
    try:
        cluster, session = connect(settings.cassandra)
    except CASSANDRA_ERRORS as exc:
        raise CassandraUnavailable(
            f"Cassandra at {describe(settings.cassandra)} is not reachable ({type(exc).__name__}). "
            "See 'ops/services status'; 'ops/services up' starts it."
        ) from exc
    try:
        yield session
    except DriverException as exc:
        raise CassandraUnavailable(
            f"Cassandra at {describe(settings.cassandra)} did not answer ({type(exc).__name__}); retry, "
            "or see 'ops/services status'."
        ) from exc
    finally:
        cluster.shutdown()


async def _bootstrap(settings: Settings, _: argparse.Namespace) -> int:
    print(
        f"bootstrapping Kafka at {settings.kafka.bootstrap_servers} and Cassandra keyspace {settings.cassandra.keyspace} ...",
        flush=True,
    )
    report = await bootstrap(settings)
    print(f"  topics created: {', '.join(report.topics_created) or 'none (all present)'}")
    print(f"  migrations applied: {', '.join(report.migrations_applied) or 'none (up to date)'}")
    return 0


def _window(args: argparse.Namespace) -> str | None:
    """The catalog string of the window asked for; None for an all-time board."""
    if args.window is None:
        for flag, given in (("--days", args.days), ("--time-zone", args.time_zone),
                            ("--first-day-of-week", args.first_day_of_week)):  # fmt: skip
            if given is not None:
                raise InvalidBoardError(f"{flag}: only with --window")
        return None
    first = Weekday(args.first_day_of_week) if args.first_day_of_week else None
    try:
        return encode_window(WindowSpec(Period(args.window), args.days, args.time_zone or "UTC", first))
    except InvalidWindow as exc:
        option = {"window.days": "--days", "window.timeZone": "--time-zone"}.get(
            exc.field, "--first-day-of-week"
        )
        raise InvalidBoardError(f"{option}: {exc.rule}") from exc


async def _create_board(settings: Settings, args: argparse.Namespace) -> int:
    try:
        problem = board_id_error(args.id)
        if problem is not None:
            raise InvalidBoardError(f"id {args.id!r}: {problem}")
        board = Board(
            id=args.id, name=args.name or args.id, home_region=args.home_region or settings.region,
            sort_order=SortOrder(args.sort_order), aggregation=Aggregation(args.aggregation),
            tie_policy=TiePolicy(args.tie_policy), allow_negative=args.allow_negative, window=_window(args),
            shards=args.shards,
        )  # fmt: skip
    except InvalidBoardError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if board.home_region not in settings.region_names():
        print(f"error: --home-region {board.home_region}: not a region of this deployment "
              f"({', '.join(settings.region_names())})", file=sys.stderr)  # fmt: skip
        return 2
    async with _cassandra(settings) as session:
        created = await CassandraCatalog(session).create(board)
    print(f"board {board.id} {'created' if created else 'already exists (unchanged)'}")
    return 0


BOARD_COLUMNS = (
    "ID",
    "STATUS",
    "HOME",
    "AGGREGATION",
    "ORDER",
    "TIE POLICY",
    "WINDOW",
    "NEGATIVE",
    "SHARDS",
    "CREATED",
)


def board_row(entry: CatalogEntry) -> tuple[str, ...]:
    b, created = entry.board, entry.created_at
    return (
        b.id, b.status, b.home_region, b.aggregation, b.sort_order, b.tie_policy, describe_window(b.window_spec),
        ("allowed" if b.allow_negative else "refused") if b.aggregation is Aggregation.SUM else "-",
        str(b.shards),
        created.strftime("%Y-%m-%d %H:%M:%SZ") if created is not None else "-",
    )  # fmt: skip


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )


async def _boards(settings: Settings, _: argparse.Namespace) -> int:
    async with _cassandra(settings) as session:
        entries = sorted(await CassandraCatalog(session).entries(), key=lambda e: e.board.id)
    if not entries:
        print("no boards yet; add one with 'ops/lb create-board ID'")
        return 0
    print(table(BOARD_COLUMNS, [board_row(e) for e in entries]))
    return 0


async def _put_profile(settings: Settings, args: argparse.Namespace) -> int:
    try:
        profile = Profile(args.user, args.name, args.country, args.avatar_url)
    except InvalidProfileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    async with _cassandra(settings) as session:
        await CassandraProfiles(session).put(profile)
    print(f"profile of {profile.user_id} saved")
    return 0


async def _rebuild(settings: Settings, args: argparse.Namespace) -> int:
    return await rebuild_command(settings, args.board, lambda line: print(line, flush=True))


async def _reshard(settings: Settings, args: argparse.Namespace) -> int:
    if not 1 <= args.shards <= MAX_SHARDS:
        print(f"error: --shards {args.shards}: must be 1..{MAX_SHARDS}", file=sys.stderr)
        return 2
    async with _cassandra(settings) as session:
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
            print(f"catalog: board {board.id} has {args.shards} shard(s) (was {board.shards})", flush=True)
    return await reshard_command(settings, board.id, args.shards, lambda line: print(line, flush=True))


async def _reconciliation(settings: Settings, args: argparse.Namespace) -> int:
    reader = ReconciliationReader(settings.kafka, args.board, lambda text: print(text, flush=True))
    await reader.read(follow=args.follow)
    if not reader.shown:
        print("nothing in reconciliation" + (f" for board {args.board}" if args.board else ""))
    return 0


async def _close(settings: Settings, args: argparse.Namespace) -> int:
    async with _cassandra(settings) as session:
        await close_command(settings, session, args.board, args.reason, lambda line: print(line, flush=True))
    return 0


def _adjustments(args: argparse.Namespace) -> list[tuple[str, int]]:
    """USER=SCORE pairs from the command line, then from ``--file`` (one a line; # starts a comment)."""
    pairs = list(args.adjustments)
    if args.file:
        try:
            with open(args.file, encoding="utf-8") as lines:
                pairs += [line.split("#", 1)[0].strip() for line in lines]
        except OSError as exc:
            raise CommandError(f"--file {args.file}: {exc.strerror}") from exc
    found = []
    for pair in filter(None, pairs):
        user, equals, score = pair.rpartition("=")
        try:
            found.append((user, int(score)))
        except ValueError:
            raise CommandError(f"adjustment {pair!r}: write USER=SCORE, the score an integer") from None
        if not equals:
            raise CommandError(f"adjustment {pair!r}: write USER=SCORE")
    return found


async def _correct(settings: Settings, args: argparse.Namespace) -> int:
    correction_id = args.id or f"c-{uuid.uuid4().hex[:12]}"
    request = parse_correction(args.board, correction_id, args.reason, _adjustments(args))
    if isinstance(request, list):
        raise CommandError("; ".join(f"{e.field}: {e.rule}" for e in request))
    async with _cassandra(settings) as session:
        try:
            done = await correct_command(settings, session, request, lambda line: print(line, flush=True),
                                         wait_s=None if args.no_wait else args.wait)  # fmt: skip
        except RedisError as exc:  # the players are checked against this region's projection
            raise CommandError(
                f"the projection's Redis at {mask_url(settings.redis.url)} did not answer ({type(exc).__name__}); "
                "see 'ops/services status'"
            ) from exc
    return 0 if done else 1


async def _results(settings: Settings, args: argparse.Namespace) -> int:
    async with _cassandra(settings) as session:
        found = await results_command(session, args.board, args.version, args.first, args.after,
                                      lambda line: print(line, flush=True))  # fmt: skip
    return 0 if found else 1


async def _award(settings: Settings, args: argparse.Namespace) -> int:
    keys = settings.intake.award_keys
    if not keys:  # production mode has no development key: only the intake's pod holds the keys
        raise CommandError("no award keys in LB_INTAKE__AWARD_KEYS: run this where the intake's keys are set")
    key_id = args.key_id or ("dev" if "dev" in keys else min(keys))
    if key_id not in keys:
        raise CommandError(
            f"no secret for key id {key_id!r} in LB_INTAKE__AWARD_KEYS (known: {', '.join(sorted(keys))})"
        )
    url = f"http://{settings.intake.host}:{settings.intake.port}"
    award = {"leaderboardId": args.board, "matchId": args.match or uuid.uuid4().hex, "userId": args.user,
             "awardType": args.type, "score" if args.score else "delta": args.amount}  # fmt: skip
    occurred_at = args.occurred_at or (
        None if args.match else datetime.now(UTC).isoformat(timespec="milliseconds")
    )
    if occurred_at is not None:
        award["occurredAt"] = occurred_at
    client = AwardClient(url, key_id, keys[key_id].get_secret_value())
    try:
        response = await client.send(award)
    except httpx.TransportError as exc:
        raise CommandError(
            f"the intake at {url} is not reachable ({type(exc).__name__}); is the region running ('ops/run')?"
        ) from exc
    finally:
        await client.aclose()
    ok, text = describe_answer(response)
    print(text, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


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
    create.add_argument("--allow-negative", action="store_true", help="SUM boards: accept negative deltas")
    create.add_argument(
        "--window", choices=[p.value for p in Period], help="a time window (default: all-time)"
    )
    create.add_argument("--days", type=int, help="ROLLING: the number of days ranked (1..366)")
    create.add_argument(
        "--time-zone", help="IANA zone of the window's days (default UTC), e.g. Europe/Stockholm"
    )
    create.add_argument(
        "--first-day-of-week", choices=[d.value for d in Weekday], help="WEEKLY (default MONDAY)"
    )
    create.add_argument(
        "--shards",
        type=int,
        default=1,
        help=f"spread the board's players over N shards (1..{MAX_SHARDS}, default 1)",
    )
    commands.add_parser("boards", help="list the board catalog with every board's settings")
    profile = commands.add_parser("put-profile", help="create or replace a player's profile")
    profile.add_argument("user")
    profile.add_argument("--name", required=True, help="display name (1..64 characters)")
    profile.add_argument("--country", help="ISO 3166 two-letter code, e.g. SE")
    profile.add_argument("--avatar-url", help="http(s) URL of the player's picture")
    rebuild_cmd = commands.add_parser(
        "rebuild", help="rebuild the Redis projection from Kafka and swap it in"
    )
    rebuild_cmd.add_argument("--board", help="only this board (default: all boards)")
    reshard = commands.add_parser(
        "reshard", help="spread a board's players over another number of shards (this region's projection)"
    )
    reshard.add_argument("board")
    reshard.add_argument(
        "--shards", type=int, required=True, help=f"the new number of shards (1..{MAX_SHARDS})"
    )
    reconciliation = commands.add_parser("reconciliation", help="what was not applied or audited, and why")
    reconciliation.add_argument("--board", help="only this board")
    reconciliation.add_argument(
        "--follow", action="store_true", help="keep printing new entries (Ctrl-C ends)"
    )
    close = commands.add_parser("close", help="begin closing a board (in its home region)")
    close.add_argument("board")
    close.add_argument("--reason", help="why the board closes (kept with its result)")
    correct = commands.add_parser(
        "correct", help="correct a closed board's result (in its home region): publishes the next version"
    )
    correct.add_argument("board")
    correct.add_argument(
        "adjustments", nargs="*", metavar="USER=SCORE", help="a player's corrected final score"
    )
    correct.add_argument(
        "--reason", required=True, help="why the result is corrected (kept with the version)"
    )
    correct.add_argument("--file", help="more USER=SCORE adjustments, one a line (# starts a comment)")
    correct.add_argument("--id", help="correction id (default: a new one); the same id again resumes it")
    correct.add_argument("--wait", type=float, default=600.0, help="seconds to follow it (default 600)")
    correct.add_argument("--no-wait", action="store_true", help="return once it is recorded")
    results = commands.add_parser("results", help="an archived result of a closed board, page by page")
    results.add_argument("board")
    results.add_argument("--version", type=int, help="result version (default: the newest)")
    results.add_argument("--first", type=int, default=100, help="ranks to show (default 100)")
    results.add_argument("--after", type=int, default=0, help="ranks to skip (default 0)")
    award = commands.add_parser("award", help="send one signed award to this region's intake")
    award.add_argument("board")
    award.add_argument("user")
    award.add_argument("amount", type=int, help="the delta (SUM boards) or, with --score, the score")
    award.add_argument("match", nargs="?", help="match id (default: a new random one)")
    award.add_argument("--score", action="store_true", help="send a score, for MAX and MIN boards")
    award.add_argument("--type", default="points", help="award type (default: points)")
    award.add_argument("--key-id", help="award key id (default: dev, or the first configured key)")
    award.add_argument(
        "--occurred-at",
        help="the award's event time, RFC 3339 (default: now for a new award; with MATCH given, none, "
        "so that sending it again is a repeat); boards with a time window need one",
    )
    return parser


COMMANDS: dict[str, Callable[[Settings, argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "bootstrap": _bootstrap,
    "create-board": _create_board,
    "boards": _boards,
    "put-profile": _put_profile,
    "rebuild": _rebuild,
    "reshard": _reshard,
    "reconciliation": _reconciliation,
    "close": _close,
    "correct": _correct,
    "results": _results,
    "award": _award,
}


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
    try:
        return asyncio.run(COMMANDS[args.command](settings, args))
    except (TopicMissing, CassandraUnavailable, CommandError, CloseRefused, CorrectionRefused) as exc:
        print(f"error: {redact(str(exc), settings.secret_values())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
