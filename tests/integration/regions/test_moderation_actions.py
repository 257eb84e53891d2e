"""Recording moderation actions in Cassandra (``regions.actions.moderate``): numbered per board, the
same ask answered by the last action, and on a CLOSING or CLOSED board the next result version
claimed for each action (published by the home lifecycle worker once CLOSED), never one of an action
of the board's open days."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from cassandra.cluster import Session

from regions.actions.moderate import record_moderation
from regions.core.boards import Board
from regions.core.moderation import ModerationRequest
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.corrections import CassandraCorrections
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.moderation import CassandraModeration


async def test_actions_are_numbered_and_a_closing_board_claims_a_version_for_each(cassandra_session: Session) -> None:
    lifecycle, moderation = CassandraLifecycle(cassandra_session), CassandraModeration(cassandra_session)
    corrections = CassandraCorrections(cassandra_session)
    board = Board(f"modact-{uuid.uuid4().hex[:8]}", "m", "eu")
    assert await CassandraCatalog(cassandra_session).create(board)
    now = datetime.now(UTC)

    async def act(user: str, hidden: bool, at: datetime) -> int:
        entry = await record_moderation(lifecycle, moderation, corrections,
                                        ModerationRequest(board.id, user, hidden, "why"), region="eu", now=at)  # fmt: skip
        return entry.sequence

    assert await act("ann", True, now) == 1
    assert await act("ann", True, now) == 1  # already hidden: the last action answers
    assert await corrections.of_board(board.id) == []  # an OPEN board's action is in the close's result
    assert await lifecycle.begin_close(board.id, "season", now + timedelta(seconds=1))

    assert await act("bob", True, now + timedelta(seconds=2)) == 2
    assert await act("ann", False, now + timedelta(seconds=3)) == 3
    assert await act("bob", True, now + timedelta(seconds=4)) == 2

    versions = [(e.result_version, e.correction_id, e.adjustments, e.moderated) for e in await corrections.of_board(board.id)]
    assert versions == [(2, "moderation:2", (), (("bob", True),)), (3, "moderation:3", (), (("ann", False),))]
    assert [(e.sequence, e.user_id, e.action) for e in await moderation.page(board.id, 0, 10)] == [
        (1, "ann", "HIDE"), (2, "bob", "HIDE"), (3, "ann", "RESTORE")]  # fmt: skip
