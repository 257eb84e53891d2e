"""``ops/lb close`` and ``ops/lb results``: an operator's view of a board's close and its archive."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from cassandra.cluster import Session

from regions.cassandra_lifecycle import CassandraLifecycle
from regions.cassandra_results import CassandraResults
from regions.core.results import page, page_chunks
from regions.lifecycle.close import begin_close
from regions.settings import Settings


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
