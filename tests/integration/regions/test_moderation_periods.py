"""Moderation of a board with periods whose periods are closed, on the real intake, processor,
projector and lifecycle worker: a hide publishes a new result version of every closed period whose
archive holds the player (the previous period and an older one), without them; a restore publishes
one more with them again; a restart of the lifecycle worker publishes nothing twice.

The lifecycle worker's clock is moved forward (as in ``test_windows``) so that two days close at once;
the actions are recorded at the worker's time, so the older day is neither the current nor the
previous period of the action.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from cassandra.cluster import Session

from regions.actions.moderate import record_moderation
from regions.core.boards import BoardStatus
from regions.core.moderation import ModerationRequest
from regions.core.periods import Period, WindowSpec, period_of
from regions.runtime.settings import Settings
from regions.stores.cassandra.corrections import CassandraCorrections
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.moderation import CassandraModeration
from regions.stores.cassandra.periods import CassandraPeriods
from regions.stores.cassandra.results import CassandraResults
from tests.conftest import RegionFactory
from tests.harness import Region
from tests.integration.regions.test_cli import lb
from tests.integration.regions.test_windows import DAY_MS, _clock_offset, _send, _windowed

DAILY = WindowSpec(Period.DAILY)


async def _version(periods: CassandraPeriods, board_id: str, key: str, version: int) -> bool:
    found = (await periods.between(board_id, key, key)).get(key)
    return found is not None and found.status is BoardStatus.CLOSED and found.result_version == version


async def _ranks(results: CassandraResults, board_id: str, version: int) -> list[tuple[int, str, int]]:
    header = await results.get(board_id, version)
    assert header is not None, f"{board_id} has no version {version}"
    return [(rank, e.user_id, e.score) for rank, e in enumerate(await results.all_entries(header), 1)]


async def test_hiding_republishes_every_closed_period_holding_the_player_and_restoring_brings_them_back(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session
) -> None:
    region, board = await _windowed(region_factory, topics, DAILY, "modp")
    now = int(time.time() * 1000)
    older, previous = period_of(DAILY, now), period_of(DAILY, now + DAY_MS)
    for user, amount, at in (("ann", 50, now), ("bob", 40, now), ("cat", 30, now),
                             ("bob", 10, now + DAY_MS), ("ann", 5, now + DAY_MS)):  # fmt: skip
        assert await _send(region, board, user, amount, at) == 202
    await region.wait_for_total(f"{board.id}@{older.key}", "cat", 30)
    await region.wait_for_total(f"{board.id}@{previous.key}", "ann", 5)
    worker_ms = previous.end_ms + int(region.settings.windows.grace_s * 1000) + 2_000
    await region.start("lifecycle", overrides=_clock_offset(worker_ms))
    periods, results = CassandraPeriods(cassandra_session), CassandraResults(cassandra_session)
    for key in (older.key, previous.key):
        await Region.wait_until(lambda key=key: _version(periods, board.id, key, 1), 60, f"{key} CLOSED")
    stores = (CassandraLifecycle(cassandra_session), CassandraModeration(cassandra_session))
    corrections = CassandraCorrections(cassandra_session)

    async def act(hidden: bool, at_ms: int) -> None:
        request = ModerationRequest(board.id, "bob", hidden, "cheating" if hidden else "appeal upheld")
        await record_moderation(*stores, request, region=region.settings.region,
                                now=datetime.fromtimestamp(at_ms / 1000, UTC))  # fmt: skip

    await act(True, worker_ms)  # the action's current period is the day after ``previous``
    for key in (older.key, previous.key):
        await Region.wait_until(lambda key=key: _version(periods, board.id, key, 2), 60, f"{key} version 2")
    older_id, previous_id = f"{board.id}@{older.key}", f"{board.id}@{previous.key}"
    assert await _ranks(results, older_id, 2) == [(1, "ann", 50), (2, "cat", 30)]
    assert await _ranks(results, previous_id, 2) == [(1, "ann", 5)]
    assert await _ranks(results, older_id, 1) == [(1, "ann", 50), (2, "bob", 40), (3, "cat", 30)]
    assert await region.total_of(older_id, "bob") is None  # the period's reads leave them out too

    await region.stop("lifecycle")  # a restart writes and publishes nothing again
    await region.start("lifecycle", overrides=_clock_offset(worker_ms + 5_000))
    await act(False, worker_ms + 5_000)
    for key in (older.key, previous.key):
        await Region.wait_until(lambda key=key: _version(periods, board.id, key, 3), 60, f"{key} version 3")
    assert await _ranks(results, older_id, 3) == [(1, "ann", 50), (2, "bob", 40), (3, "cat", 30)]
    assert await _ranks(results, previous_id, 3) == [(1, "bob", 10), (2, "ann", 5)]
    claims = [(e.result_version, e.correction_id, e.moderated) for e in await corrections.of_board(older_id)]
    assert claims == [(2, "moderation:1", (("bob", True),)), (3, "moderation:2", (("bob", False),))]
    assert [h.version for h in await results.versions(older_id)] == [3, 2, 1]

    status, out, _ = await lb(region.settings, "results", older_id)
    assert status == 0 and f"{older_id} result version 3" in out and "bob" in out
