"""Recording a moderation action (a player hidden on a board, or shown again), for every caller (the
gateway's hidePlayer and restorePlayer, ``ops/lb hide`` and ``ops/lb restore``). Its home region's
lifecycle worker then writes it into the awards topic (``regions.lifecycle.moderation``), and claims
the board's next result version for it unless the board was still OPEN once the record was there
(then the record is before the close's cutoff, and in its result).

Checked here, each refusal naming the field: the board exists and this is its home region; asking
for what the player already is answers their last action (nothing new is recorded).
"""

from __future__ import annotations

from datetime import datetime

from regions.actions.home import ActionRefused, home_record
from regions.core.corrections import CorrectionRequest
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
    ``ActionRefused``: ``unknown`` (no such board), ``not_home``, ``invalid`` (see the message) or
    ``unavailable`` (retry later)."""
    await home_record(lifecycle, request.board_id, region=region, done="moderated in",
                      action="action", field="leaderboardId: ")  # fmt: skip
    return await _recorded(moderation, request, now)


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
