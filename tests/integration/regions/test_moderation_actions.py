"""Recording moderation actions in Cassandra (``regions.actions.moderate``): numbered per board, and
the same ask answered by the last action. (Which result versions an action claims is decided when
its record is written: ``test_moderation_close``.)"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from cassandra.cluster import Session

from regions.actions.home import ActionRefused
from regions.actions.moderate import record_moderation
from regions.core.boards import Board
from regions.core.moderation import ModerationRequest
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.moderation import CassandraModeration


async def test_actions_are_numbered_and_the_same_ask_answers_the_last_action(cassandra_session: Session) -> None:
    lifecycle, moderation = CassandraLifecycle(cassandra_session), CassandraModeration(cassandra_session)
    board = Board(f"modact-{uuid.uuid4().hex[:8]}", "m", "eu")
    assert await CassandraCatalog(cassandra_session).create(board)
    now = datetime.now(UTC)

    async def act(user: str, hidden: bool, at: datetime) -> int:
        entry = await record_moderation(lifecycle, moderation, ModerationRequest(board.id, user, hidden, "why"),
                                        region="eu", now=at)  # fmt: skip
        return entry.sequence

    assert await act("ann", True, now) == 1
    assert await act("ann", True, now) == 1  # already hidden: the last action answers
    assert await lifecycle.begin_close(board.id, "season", now + timedelta(seconds=1))
    assert await act("bob", True, now + timedelta(seconds=2)) == 2
    assert await act("ann", False, now + timedelta(seconds=3)) == 3
    assert await act("bob", True, now + timedelta(seconds=4)) == 2
    with pytest.raises(ActionRefused, match="userId"):
        await act("cat", False, now)  # never hidden: nothing to restore
    with pytest.raises(ActionRefused, match="home region"):
        await record_moderation(lifecycle, moderation, ModerationRequest(board.id, "ann", True, "why"),
                                region="us", now=now)  # fmt: skip
    assert [(e.sequence, e.user_id, e.action) for e in await moderation.page(board.id, 0, 10)] == [
        (1, "ann", "HIDE"), (2, "bob", "HIDE"), (3, "ann", "RESTORE")]  # fmt: skip
