"""The board catalog is global: two regions creating the same board id at once yield one board, and
the loser is told it exists (the gateway answers ALREADY_EXISTS)."""

from __future__ import annotations

import asyncio
import uuid

from cassandra.cluster import Session

from regions.core.boards import Board, Consistency
from regions.runtime.settings import Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.cassandra.session import connect


async def test_the_same_id_created_at_once_in_two_regions_yields_one_board(
    settings: Settings, cassandra_session: Session
) -> None:
    # Each region has its own session (its own connection, as two regions' processes would).
    cluster, other_session = connect(
        settings.cassandra.model_copy(update={"keyspace": cassandra_session.keyspace})
    )
    try:
        eu, us = CassandraCatalog(cassandra_session), CassandraCatalog(other_session)
        for _ in range(5):
            board_id = f"race-{uuid.uuid4().hex[:8]}"
            created = await asyncio.gather(
                eu.create(Board(board_id, "From eu", "eu")), us.create(Board(board_id, "From us", "us"))
            )
            assert sorted(created) == [False, True]
            winner = "eu" if created[0] else "us"
            for catalog in (eu, us):  # both regions read the winner's board
                stored = await catalog.get(board_id)
                assert stored is not None and stored.home_region == winner and stored.name == f"From {winner}"
    finally:
        cluster.shutdown()


async def test_consistency_is_stored_with_the_board_and_older_rows_read_regional(
    cassandra_session: Session,
) -> None:
    catalog = CassandraCatalog(cassandra_session)
    routed, older = (f"consistency-{uuid.uuid4().hex[:8]}" for _ in range(2))
    assert await catalog.create(Board(routed, "Routed", "eu", consistency=Consistency.HOME_ROUTED))
    assert await catalog.create(Board(older, "Older", "eu"))
    # A row written by a release before the column: no consistency at all.
    cassandra_session.execute("UPDATE boards SET consistency = null WHERE board_id = %s", (older,))
    found = {b.id: b.consistency for b in await catalog.all() if b.id in (routed, older)}
    assert found == {routed: Consistency.HOME_ROUTED, older: Consistency.REGIONAL}
    assert await catalog.set_consistency(older, Consistency.HOME_ROUTED)
    switched = await catalog.get(older)
    assert switched is not None and switched.consistency is Consistency.HOME_ROUTED
    assert not await catalog.set_consistency(f"missing-{uuid.uuid4().hex[:8]}", Consistency.REGIONAL)
