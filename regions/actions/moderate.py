"""Recording a moderation action (a player hidden on a board, or shown again), for every caller (the
gateway's hidePlayer and restorePlayer, ``ops/lb hide`` and ``ops/lb restore``). Its home region's
lifecycle worker then writes it into the awards topic (``regions.lifecycle.moderation``).

Checked here, each refusal naming the field: the board exists, this is its home region, and it is
OPEN; asking for what the player already is answers their last action (nothing new is recorded).
"""

from __future__ import annotations

from datetime import datetime

from regions.actions.home import ActionRefused, home_record
from regions.core.boards import BoardStatus
from regions.core.moderation import ModerationRequest, already
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.moderation import CassandraModeration, ModerationEntry

ATTEMPTS = 5  # sequences claimed by concurrent actions on one board before giving up


async def record_moderation(
    lifecycle: CassandraLifecycle,
    moderation: CassandraModeration,
    request: ModerationRequest,
    *,
    region: str,
    now: datetime,
) -> ModerationEntry:
    """Record ``request`` as the board's next action (or answer the player's last one, if it is that).
    ``ActionRefused``: ``unknown`` (no such board), ``not_home``, ``not_open``, ``invalid`` (see the
    message) or ``unavailable`` (retry later)."""
    record = await home_record(lifecycle, request.board_id, region=region, done="moderated in",
                               action="action", field="leaderboardId: ")  # fmt: skip
    if record.board.status is not BoardStatus.OPEN:
        raise ActionRefused(
            "not_open",
            f"leaderboardId: leaderboard {request.board_id!r} is {record.board.status}; players are hidden on "
            "an OPEN board (a closed board's result changes by publishCorrection)",
        )
    for _ in range(ATTEMPTS):
        last = await moderation.last_of(request.board_id, request.user_id)
        same = already(None if last is None else last.hidden, request)
        if not isinstance(same, bool):
            raise ActionRefused("invalid", f"{same.field}: {same.rule}")
        if same and last is not None:
            return last
        sequence = await moderation.last_sequence(request.board_id)
        claimed = (sequence or 0) + 1
        if await moderation.record(request, claimed, sequence, now):
            entry = await moderation.get(request.board_id, claimed)
            if entry is not None:
                return entry
    raise ActionRefused(
        "unavailable", f"moderation of {request.board_id!r} is being recorded concurrently; retry"
    )
