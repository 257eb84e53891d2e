"""``ops/lb close``, ``ops/lb correct`` and ``ops/lb results``: an operator's view of a board's close,
its corrections and its archive."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime

from cassandra.cluster import Session

from regions.actions.close import begin_close
from regions.actions.correct import record_correction
from regions.core.corrections import CorrectionRequest
from regions.core.results import page, page_chunks
from regions.runtime.settings import Settings
from regions.stores.cassandra.corrections import CassandraCorrections, CorrectionEntry
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.results import CassandraResults
from regions.stores.redis.projection import RedisProjection, connect_redis

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
    """Print a result's header and ranks after+1 .. after+first; False when there is no such result."""
    results = CassandraResults(session)
    header = await results.get(board_id, version)
    if header is None:
        say(f"no archived result {version if version is not None else ''} for {board_id}".replace("  ", " "))
        return False
    say(f"{board_id} result version {header.version}, created {header.created_at}, reason {header.reason!r}, "
        f"{header.player_count} players in {header.chunk_count} chunks of {header.chunk_size}")  # fmt: skip
    numbers = page_chunks(after, first, header.chunk_size, header.player_count)
    chunks = await results.chunks(board_id, header.version, numbers)
    for rank, entry in page(chunks, after, first, header.chunk_size):
        say(f"{rank:>8}  {entry.user_id:<32} {entry.score:>16}  v{entry.version}")
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
