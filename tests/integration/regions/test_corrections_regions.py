"""A board homed in eu, with awards accepted in eu and us, closes and is corrected in eu: the correction's
records replicate to us like awards, and us's own processor and projector serve the corrected
standings; us's lifecycle worker tells its own subscribers of the new result version."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime
from typing import cast

from cassandra.cluster import Session

from regions.actions.correct import record_correction
from regions.core.boards import Board
from regions.core.corrections import CorrectionRequest, parse_correction
from regions.runtime.settings import Settings
from regions.stores.cassandra.corrections import CassandraCorrections
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.results import CassandraResults
from schema.redis_keys import announced_key
from tests.clusters import Replicators
from tests.conftest import RegionFactory
from tests.harness import Region
from tests.integration.regions.test_close import Sent, _archived, _closed, _send_batch, _settings
from tests.integration.regions.test_corrections import corrected, published, rows


async def _serves(region: Region, board_id: str, expected: list[tuple[str, int, int, str]]) -> bool:
    return all([await region.total_of(board_id, user) == score for user, score, _, _ in expected])


async def _announced(region: Region, board_id: str, state: str) -> bool:
    told = await region.projection.redis.hget(announced_key(region.settings.redis.key_prefix), board_id)
    return cast(str | None, told) == state


async def test_a_correction_reaches_the_served_standings_of_every_region(
    region_factory: RegionFactory,
    eu_us: tuple[Settings, Settings],
    replicators: Replicators,
    cassandra_session: Session,
) -> None:
    eu_settings, us_settings = (_settings(s, honour_cutoffs=True, catalog_ttl_s=1.0) for s in eu_us)
    own_keys = us_settings.redis.model_copy(update={"key_prefix": f"{us_settings.redis.key_prefix}us"})
    us_settings = us_settings.model_copy(update={"redis": own_keys})  # us's projection is its own
    eu = await region_factory(eu_settings, services=("processor", "projector", "intake"))
    us = await region_factory(us_settings, services=("processor", "projector", "intake"))
    await replicators(eu.settings, "us")
    await replicators(us.settings, "eu")
    await eu.start("lifecycle")
    await us.start("lifecycle")
    lifecycle, results = CassandraLifecycle(cassandra_session), CassandraResults(cassandra_session)
    board = Board(f"fix-{uuid.uuid4().hex[:8]}", "two regions", "eu")
    await eu.create_board(board)
    rng = random.Random(4)
    for region in (eu, us):
        await _send_batch(region, board, rng, Sent(), 60)

    assert await lifecycle.begin_close(board.id, "season over", datetime.now(UTC))
    await eu.wait_until(lambda: _closed(lifecycle, board.id), within=90, what="CLOSED")
    v1 = await _archived(results, board.id)
    scores = {v1[0].user_id: v1[-1].score - 1, v1[-1].user_id: v1[0].score + 5}
    request = parse_correction(board.id, "fix-1", "double counted", list(scores.items()))
    assert isinstance(request, CorrectionRequest)
    entry = await record_correction(
        lifecycle, CassandraCorrections(cassandra_session), eu.projection, eu.settings.redis.key_prefix, request,
        region="eu", now=datetime.now(UTC),
    )  # fmt: skip
    assert entry.result_version == 2
    await eu.wait_until(lambda: published(results, board.id, 2), within=60, what="version 2 archived in eu")

    expected = corrected(board, v1, scores)
    assert rows(await _archived(results, board.id, 2)) == expected
    await us.wait_until(lambda: _serves(us, board.id, expected), within=60, what="us serving version 2")
    assert await _serves(eu, board.id, expected)
    await us.wait_until(
        lambda: _announced(us, board.id, "CLOSED:2"), what="us's subscribers told of version 2"
    )
