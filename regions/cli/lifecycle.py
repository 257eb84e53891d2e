"""``ops/lb close``, ``ops/lb correct`` and ``ops/lb results``: an operator's view of a board's close,
its corrections and its archive."""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from cassandra.cluster import Session
from redis.exceptions import RedisError

from regions.actions.close import begin_close
from regions.actions.correct import record_correction
from regions.cli.command import CommandError, Commands, add_command, cassandra_session, say
from regions.core.corrections import CorrectionRequest, parse_correction
from regions.core.redaction import mask_url
from regions.core.results import holds_estimates, page, page_chunks
from regions.runtime.settings import Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.corrections import CassandraCorrections, CorrectionEntry
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.results import CassandraResults
from regions.stores.redis.projection import RedisProjection, connect_redis
from schema.scoped import split_board_id

PROGRESS_EVERY_S = 10.0


async def close_command(
    settings: Settings, session: Session, board_id: str, reason: str | None, say: Callable[[str], None]
) -> None:
    record = await begin_close(CassandraLifecycle(session), board_id, reason, region=settings.region,
                               now=datetime.now(UTC))  # fmt: skip
    say(f"{board_id} is {record.board.status}"
        + (f" (reason: {record.close_reason})" if record.close_reason else "")
        + ("; the lifecycle workers write the cutoffs, then the home region archives it and sets CLOSED"
           if record.board.status == "CLOSING" else ""))  # fmt: skip


async def results_command(
    session: Session, board_id: str, version: int | None, first: int, after: int, say: Callable[[str], None]
) -> bool:
    """Print a result's header and ranks after+1 .. after+first; False when there is no such result.
    An approximate board's result says its scores are estimates, with their error bound, and each
    entry whether its count is verified."""
    results = CassandraResults(session)
    header = await results.get(board_id, version)
    if header is None:
        say(f"no archived result {version if version is not None else ''} for {board_id}".replace("  ", " "))
        return False
    board = await CassandraCatalog(session).get(split_board_id(board_id)[0])
    estimated = holds_estimates(header.error_bound, board is not None and board.approximate is not None)
    bound = "unknown" if header.error_bound is None else header.error_bound
    say(f"{board_id} result version {header.version}, created {header.created_at}, reason {header.reason!r}, "
        f"{header.player_count} players in {header.chunk_count} chunks of {header.chunk_size}"
        + (f"; scores are estimates, error bound {bound}" if estimated else ""))  # fmt: skip
    numbers = page_chunks(after, first, header.chunk_size, header.player_count)
    chunks = await results.chunks(board_id, header.version, numbers)
    for rank, entry in page(chunks, after, first, header.chunk_size):
        line = f"{rank:>8}  {entry.user_id:<32} {entry.score:>16}  v{entry.version}"
        if estimated:
            exact = entry.shown(estimated=True).exact_score
            line += "  not verified" if exact is None else f"  verified {exact}"
        say(line)
    return True


def _stage(entry: CorrectionEntry) -> str:
    if entry.published:
        return f"published: result version {entry.result_version} is readable ('ops/lb results {entry.board_id}')"
    if entry.written is None:
        return "recorded; the home lifecycle worker writes its records next"
    return (f"records written ({', '.join(f'{w} @{o}' for w, o in sorted(entry.written.items()))}); "
            "waiting for the processors and the projector, then the archive")  # fmt: skip


async def correct_command(
    settings: Settings,
    session: Session,
    request: CorrectionRequest,
    say: Callable[[str], None],
    *,
    wait_s: float | None,
) -> bool:
    """Record the correction and, unless ``wait_s`` is None, follow it until its version is
    published (True) or ``wait_s`` passes (False)."""
    corrections, redis = CassandraCorrections(session), connect_redis(settings.redis)
    try:
        entry = await record_correction(CassandraLifecycle(session), corrections,
                                        RedisProjection(redis, settings.redis.key_prefix),
                                        settings.redis.key_prefix, request, region=settings.region,
                                        now=datetime.now(UTC), at="")  # fmt: skip
    finally:
        await redis.aclose()
    say(f"{request.board_id}: correction {entry.correction_id!r} is result version {entry.result_version} "
        f"({len(entry.adjustments)} players; retry with --id {entry.correction_id} to resume)")  # fmt: skip
    started, shown, next_note = time.monotonic(), "", time.monotonic() + PROGRESS_EVERY_S
    while wait_s is not None:
        stage = _stage(entry)
        if stage != shown:
            say(f"  {stage}")
            shown = stage
        if entry.published:
            return True
        if time.monotonic() - started > wait_s:
            say(f"  not published within {wait_s:g} s; it goes on without this command. Is 'python -m "
                "regions.lifecycle' running and ready in this region (port 8089)? Follow it with "
                f"'ops/lb correct ... --id {entry.correction_id}'")  # fmt: skip
            return False
        if time.monotonic() >= next_note:
            say(f"  still {shown.split(';')[0]} after {time.monotonic() - started:.0f} s")
            next_note = time.monotonic() + PROGRESS_EVERY_S
        await asyncio.sleep(0.5)
        entry = await corrections.get(entry.board_id, entry.correction_id) or entry
    return True


async def _close(settings: Settings, args: argparse.Namespace) -> int:
    async with cassandra_session(settings) as session:
        await close_command(settings, session, args.board, args.reason, say)
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
    async with cassandra_session(settings) as session:
        try:
            done = await correct_command(settings, session, request, say,
                                         wait_s=None if args.no_wait else args.wait)  # fmt: skip
        except RedisError as exc:  # the players are checked against this region's projection
            raise CommandError(
                f"the projection's Redis at {mask_url(settings.redis.url)} did not answer ({type(exc).__name__}); "
                "see 'ops/services status'"
            ) from exc
    return 0 if done else 1


async def _results(settings: Settings, args: argparse.Namespace) -> int:
    async with cassandra_session(settings) as session:
        found = await results_command(session, args.board, args.version, args.first, args.after, say)
    return 0 if found else 1


def register(commands: Commands) -> None:
    close = add_command(commands, "close", _close, "begin closing a board (in its home region)")
    close.add_argument("board")
    close.add_argument("--reason", help="why the board closes (kept with its result)")
    _add_correct(commands)
    results = add_command(commands, "results", _results, "an archived result of a closed board, page by page")
    results.add_argument("board")
    results.add_argument("--version", type=int, help="result version (default: the newest)")
    results.add_argument("--first", type=int, default=100, help="ranks to show (default 100)")
    results.add_argument("--after", type=int, default=0, help="ranks to skip (default 0)")


def _add_correct(commands: Commands) -> None:
    correct = add_command(
        commands,
        "correct",
        _correct,
        "correct a closed board's result (in its home region): publishes the next version",
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
