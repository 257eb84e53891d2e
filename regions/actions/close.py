"""Beginning a board's close, for every caller (the gateway's closeLeaderboard, ``ops/lb close``)."""

from __future__ import annotations

from datetime import datetime

from regions.core.lifecycle import MAX_REASON, BeginClose, close_request
from regions.stores.cassandra.lifecycle import CassandraLifecycle, CloseRecord


class CloseRefused(Exception):
    """The close cannot begin here; ``kind`` is ``invalid``, ``unknown`` or ``not_home``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


async def begin_close(
    lifecycle: CassandraLifecycle, board_id: str, reason: str | None, *, region: str, now: datetime
) -> CloseRecord:
    """OPEN -> CLOSING in the board's home region; a CLOSING or CLOSED board is returned as it is."""
    if reason is not None and len(reason) > MAX_REASON:
        raise CloseRefused("invalid", f"reason: at most {MAX_REASON} characters, got {len(reason)}")
    record = await lifecycle.record(board_id)
    if record is None:
        raise CloseRefused("unknown", f"leaderboard {board_id!r} does not exist")
    home = record.board.home_region
    if home != region:
        # Not forwarded: a region knows the other regions' Kafka and Redis, not their gateways.
        raise CloseRefused(
            "not_home",
            f"leaderboard {board_id!r} is closed from its home region {home!r}, not {region!r}: "
            "send the close to that region",
        )
    if isinstance(close_request(record.board.status), BeginClose):
        await lifecycle.begin_close(board_id, reason, now)  # False: a concurrent close won; same outcome
        record = await lifecycle.record(board_id) or record
    return record
