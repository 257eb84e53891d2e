"""Beginning a board's close, for every caller (the gateway's closeLeaderboard, ``ops/lb close``)."""

from __future__ import annotations

from datetime import datetime

from regions.actions.home import ActionRefused, home_record
from regions.core.lifecycle import MAX_REASON, BeginClose, close_request
from regions.stores.cassandra.lifecycle import CassandraLifecycle, CloseRecord


async def begin_close(
    lifecycle: CassandraLifecycle, board_id: str, reason: str | None, *, region: str, now: datetime
) -> CloseRecord:
    """OPEN -> CLOSING in the board's home region; a CLOSING or CLOSED board is returned as it is.
    ``ActionRefused``: ``invalid``, ``unknown`` or ``not_home``."""
    if reason is not None and len(reason) > MAX_REASON:
        raise ActionRefused("invalid", f"reason: at most {MAX_REASON} characters, got {len(reason)}")
    record = await home_record(lifecycle, board_id, region=region, done="closed from", action="close")
    if isinstance(close_request(record.board.status), BeginClose):
        await lifecycle.begin_close(board_id, reason, now)  # False: a concurrent close won; same outcome
        record = await lifecycle.record(board_id) or record
    return record
