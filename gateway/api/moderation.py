"""Moderation (admin): hiding a player's entry on a board in every region, showing it again, and the log."""

from __future__ import annotations

from datetime import UTC, datetime

import strawberry
from strawberry.types import Info

from gateway.api import fields, ids
from gateway.api.admin import admin_services
from gateway.api.context import Context
from gateway.api.errors import InvalidInput, LimitExceeded, NotFound, StoreUnavailable
from gateway.api.scalars import Long
from regions.actions.home import ActionRefused
from regions.actions.moderate import record_moderation
from regions.core.moderation import MAX_PAGE, parse_moderation
from regions.stores.cassandra.moderation import ModerationEntry


@strawberry.type(description="One moderation action on a board, in the board's log.")
class ModerationAction:
    leaderboard_id: strawberry.ID
    user_id: strawberry.ID
    action: str = strawberry.field(description="HIDE or RESTORE.")
    reason: str
    at: datetime
    sequence: Long = strawberry.field(
        description="The action's place in the board's log (1, 2, ...): every region applies a board's actions "
        "in this order."
    )

    @staticmethod
    def of(entry: ModerationEntry) -> ModerationAction:
        at = entry.at if entry.at.tzinfo else entry.at.replace(tzinfo=UTC)
        return ModerationAction(leaderboard_id=strawberry.ID(entry.board_id), user_id=strawberry.ID(entry.user_id),
                                action=entry.action, reason=entry.reason, at=at, sequence=Long(entry.sequence))  # fmt: skip


async def _moderate(
    info: Info[Context, None], leaderboard_id: strawberry.ID, user_id: strawberry.ID, reason: str, *, hidden: bool
) -> ModerationAction:
    services = admin_services(info)
    board_id = ids.board_id("leaderboardId", str(leaderboard_id))
    parsed = parse_moderation(board_id, str(user_id), reason, hidden=hidden)
    if isinstance(parsed, list):
        raise InvalidInput("; ".join(f"{e.field}: {e.rule}" for e in parsed))
    stores = services.cassandra.adapter
    try:
        entry = await record_moderation(stores.lifecycle, stores.moderation, parsed,
                                        region=services.settings.region, now=datetime.now(UTC))  # fmt: skip
    except ActionRefused as refused:
        error = {"unknown": NotFound, "unavailable": StoreUnavailable}
        raise error.get(refused.kind, InvalidInput)(str(refused)) from refused
    return ModerationAction.of(entry)


@strawberry.type
class ModerationMutation:
    @fields.mutation(
        "Hide a player's entry on a board in every region (admin, in the board's home region): ranks close "
        "up around it; the player's awards keep counting, hidden. Recorded at once; every region applies it "
        "at the same place of the home region's stream. On a CLOSING or CLOSED board it publishes the next "
        "result version, without the player, once CLOSED. Hiding a hidden player answers their last action."
    )
    async def hide_player(
        self, info: Info[Context, None], leaderboard_id: strawberry.ID, user_id: strawberry.ID, reason: str
    ) -> ModerationAction:
        return await _moderate(info, leaderboard_id, user_id, reason, hidden=True)

    @fields.mutation(
        "Show a hidden entry again (admin, in the board's home region), with every award applied meanwhile; "
        "on a CLOSING or CLOSED board, in the next result version. Restoring a shown player answers their last action; "
        "one never hidden is BAD_USER_INPUT."
    )
    async def restore_player(
        self, info: Info[Context, None], leaderboard_id: strawberry.ID, user_id: strawberry.ID, reason: str
    ) -> ModerationAction:
        return await _moderate(info, leaderboard_id, user_id, reason, hidden=False)


@strawberry.type
class ModerationQuery:
    @fields.field(
        f"A board's moderation log (admin), oldest first: `first` (1..{MAX_PAGE}) actions after the one whose "
        "sequence is `after` (absent: from the first)."
    )
    async def moderation(
        self, info: Info[Context, None], leaderboard_id: strawberry.ID, first: int | None = 50, after: str | None = None
    ) -> list[ModerationAction]:
        services = admin_services(info)
        board_id = ids.board_id("leaderboardId", str(leaderboard_id))
        first = 50 if first is None else first
        if first < 1:
            raise InvalidInput(f"first: must be at least 1, got {first}")
        if first > MAX_PAGE:
            raise LimitExceeded(f"first: at most {MAX_PAGE}, got {first}")
        since = 0
        if after is not None:
            if not after.isdigit() or len(after) > 18:
                raise InvalidInput(f"after: must be the sequence of an action (digits), got {after!r}")
            since = int(after)
        entries = await services.cassandra.adapter.moderation.page(board_id, since, first)
        return [ModerationAction.of(e) for e in entries]
