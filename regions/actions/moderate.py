"""Recording a moderation action (a player hidden on a board, or shown again), for every caller (the
gateway's hidePlayer and restorePlayer, ``ops/lb hide`` and ``ops/lb restore``). Its home region's
lifecycle worker then writes it into the awards topic (``regions.lifecycle.moderation``). On a
CLOSING or CLOSED board the action also claims the board's next result version, which the worker
archives once the board is CLOSED and the projection shows the player gone (or back), as it
publishes a correction.

Checked here, each refusal naming the field: the board exists and this is its home region; asking
for what the player already is answers their last action (nothing new is recorded).
"""

from __future__ import annotations

from datetime import datetime

from regions.actions.correct import claim_version
from regions.actions.home import ActionRefused, home_record
from regions.core.boards import BoardStatus
from regions.core.corrections import CorrectionRequest
from regions.core.moderation import ModerationRequest, already
from regions.stores.cassandra.base import ms
from regions.stores.cassandra.corrections import CassandraCorrections
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.moderation import CassandraModeration, ModerationEntry

ATTEMPTS = 5  # sequences claimed by concurrent actions on one board before giving up


async def record_moderation(
    lifecycle: CassandraLifecycle,
    moderation: CassandraModeration,
    corrections: CassandraCorrections,
    request: ModerationRequest,
    *,
    region: str,
    now: datetime,
) -> ModerationEntry:
    """Record ``request`` as the board's next action (or answer the player's last one, if it is that).
    ``ActionRefused``: ``unknown`` (no such board), ``not_home``, ``invalid`` (see the message) or
    ``unavailable`` (retry later)."""
    record = await home_record(lifecycle, request.board_id, region=region, done="moderated in",
                               action="action", field="leaderboardId: ")  # fmt: skip
    entry = await _recorded(moderation, request, now)
    # An action of the closing or closed board (one recorded before, whose version a crash may have left
    # unclaimed, included), never one of its open days: those are in the close's result already. The
    # version is published once the board is CLOSED.
    closing = record.board.status is not BoardStatus.OPEN
    if closing and (ms(entry.at) or 0) >= (record.closing_at_ms or 0):
        await claim_version(corrections, version_of(entry), now)
    return entry


def version_of(entry: ModerationEntry, board_id: str | None = None) -> CorrectionRequest:
    """The result version a CLOSED board's action publishes (or that of its period ``board_id``): no
    adjustments, the player named."""
    return CorrectionRequest(board_id or entry.board_id, f"moderation:{entry.sequence}", entry.reason, (),
                             ((entry.user_id, entry.hidden),))  # fmt: skip


async def _recorded(moderation: CassandraModeration, request: ModerationRequest, now: datetime) -> ModerationEntry:
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
