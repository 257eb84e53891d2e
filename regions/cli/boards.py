"""``ops/lb create-board``, ``ops/lb set-consistency``, ``ops/lb boards`` and ``ops/lb put-profile``:
the board catalog and the players' profiles, in Cassandra."""

from __future__ import annotations

import argparse
import sys

from regions.cli.command import Commands, add_command, cassandra_session
from regions.core.approximate import ApproximateSpec, InvalidApproximate, decode_approximate
from regions.core.boards import (
    MAX_SHARDS,
    Aggregation,
    Board,
    Consistency,
    InvalidBoardError,
    SortOrder,
    TiePolicy,
)
from regions.core.ids import board_id_error
from regions.core.periods import InvalidWindow, Period, Weekday, WindowSpec
from regions.core.profiles import InvalidProfileError, Profile
from regions.core.windows import describe_window, encode_window
from regions.runtime.settings import Settings
from regions.stores.cassandra.catalog import CassandraCatalog, CatalogEntry
from regions.stores.cassandra.profiles import CassandraProfiles


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


def _approximate(given: str | None) -> ApproximateSpec | None:
    """``--approximate k,epsilon,delta``: the settings of an approximate (trending) board."""
    try:
        return decode_approximate(given)
    except InvalidApproximate as exc:
        raise InvalidApproximate(f"--approximate {given}: {exc}") from exc


async def _create_board(settings: Settings, args: argparse.Namespace) -> int:
    try:
        problem = board_id_error(args.id)
        if problem is not None:
            raise InvalidBoardError(f"id {args.id!r}: {problem}")
        board = Board(
            id=args.id, name=args.name or args.id, home_region=args.home_region or settings.region,
            sort_order=SortOrder(args.sort_order), aggregation=Aggregation(args.aggregation),
            tie_policy=TiePolicy(args.tie_policy), allow_negative=args.allow_negative, window=_window(args),
            shards=args.shards, consistency=Consistency(args.consistency), approximate=_approximate(args.approximate),
        )  # fmt: skip
    except (InvalidBoardError, InvalidApproximate) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if board.home_region not in settings.region_names():
        print(f"error: --home-region {board.home_region}: not a region of this deployment "
              f"({', '.join(settings.region_names())})", file=sys.stderr)  # fmt: skip
        return 2
    async with cassandra_session(settings) as session:
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
    "CONSISTENCY",
    "APPROXIMATE",
    "CREATED",
)


def board_row(entry: CatalogEntry) -> tuple[str, ...]:
    b, created = entry.board, entry.created_at
    return (
        b.id, b.status, b.home_region, b.aggregation, b.sort_order, b.tie_policy, describe_window(b.window_spec),
        ("allowed" if b.allow_negative else "refused") if b.aggregation is Aggregation.SUM else "-",
        str(b.shards), b.consistency, b.approximate_text or "-",
        created.strftime("%Y-%m-%d %H:%M:%SZ") if created is not None else "-",
    )  # fmt: skip


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )


async def _boards(settings: Settings, _: argparse.Namespace) -> int:
    async with cassandra_session(settings) as session:
        entries = sorted(await CassandraCatalog(session).entries(), key=lambda e: e.board.id)
    if not entries:
        print("no boards yet; add one with 'ops/lb create-board ID'")
        return 0
    print(table(BOARD_COLUMNS, [board_row(e) for e in entries]))
    return 0


async def _set_consistency(settings: Settings, args: argparse.Namespace) -> int:
    async with cassandra_session(settings) as session:
        found = await CassandraCatalog(session).set_consistency(args.id, Consistency(args.consistency))
    if not found:
        print(f"error: board {args.id!r} does not exist; see 'ops/lb boards'", file=sys.stderr)
        return 2
    print(f"board {args.id} is {args.consistency}: every intake routes its new awards so within "
          f"{settings.intake.catalog_ttl_s:g} s (its catalog cache); awards accepted before stay counted")  # fmt: skip
    return 0


async def _put_profile(settings: Settings, args: argparse.Namespace) -> int:
    try:
        profile = Profile(args.user, args.name, args.country, args.avatar_url)
    except InvalidProfileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    async with cassandra_session(settings) as session:
        await CassandraProfiles(session).put(profile)
    print(f"profile of {profile.user_id} saved")
    return 0


def register(commands: Commands) -> None:
    _add_create_board(commands)
    switch = add_command(
        commands, "set-consistency", _set_consistency, "change where a board's new awards are accepted"
    )
    switch.add_argument("id")
    switch.add_argument("consistency", choices=[c.value for c in Consistency])
    add_command(commands, "boards", _boards, "list the board catalog with every board's settings")
    profile = add_command(commands, "put-profile", _put_profile, "create or replace a player's profile")
    profile.add_argument("user")
    profile.add_argument("--name", required=True, help="display name (1..64 characters)")
    profile.add_argument("--country", help="ISO 3166 two-letter code, e.g. SE")
    profile.add_argument("--avatar-url", help="http(s) URL of the player's picture")


def _add_create_board(commands: Commands) -> None:
    create = add_command(commands, "create-board", _create_board, "add a board to the catalog")
    create.add_argument("id")
    create.add_argument("--name")
    create.add_argument("--home-region")
    create.add_argument("--sort-order", choices=[s.value for s in SortOrder], default="DESC")
    create.add_argument(
        "--aggregation", choices=[a.value for a in Aggregation], default="SUM",
        help="SUM: deltas added up; MAX, MIN: the best score; LATEST: the score of the award that happened last",
    )  # fmt: skip
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
    create.add_argument(
        "--consistency", choices=[c.value for c in Consistency], default="REGIONAL",
        help="REGIONAL: awards accepted by the region that received them; HOME_ROUTED: by the home region only",
    )  # fmt: skip
    create.add_argument(
        "--approximate", metavar="K,EPSILON,DELTA",
        help="a trending board (SUM): its best K kept by a Count-Min Sketch of error EPSILON x total with "
        "probability 1 - DELTA, e.g. 100,0.001,0.001; no exact ranks",
    )  # fmt: skip
