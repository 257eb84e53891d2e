"""A board homed in eu closes across eu and us: the home region archives only once it has the cutoff of
every (region, partition), which us's markers bring through replication; while us is cut off from eu
the board stays CLOSING, and once it heals the result counts exactly the awards before each cutoff."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime

from cassandra.cluster import Session

from regions.core.boards import Board, BoardStatus
from regions.runtime.settings import Settings
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.results import CassandraResults
from regions.stores.redis.cutoffs import reached_cutoffs
from tests.clusters import Replicators
from tests.conftest import RegionFactory
from tests.harness import Region
from tests.integration.regions.test_close import (
    Sent,
    _archived,
    _closed,
    _cutoffs,
    _markers_written,
    _oracle,
    _send_batch,
    _settings,
)


async def _late_reconciled(home: Region, board_id: str, late: set[str]) -> bool:
    found = {r.award.match_id for r in await home.reconciliation()
             if r.reason == "late" and r.award is not None and r.award.board_id == board_id}  # fmt: skip
    return found == late


async def test_the_home_region_archives_only_with_every_regions_cutoffs(
    region_factory: RegionFactory,
    eu_us: tuple[Settings, Settings],
    replicators: Replicators,
    cassandra_session: Session,
) -> None:
    eu_settings, us_settings = (_settings(s, honour_cutoffs=True, catalog_ttl_s=60.0) for s in eu_us)
    eu = await region_factory(eu_settings, services=("processor", "projector", "intake"))
    us = await region_factory(us_settings, services=("intake",))
    await eu.start("lifecycle")
    await us.start("lifecycle")
    lifecycle, results = CassandraLifecycle(cassandra_session), CassandraResults(cassandra_session)
    board = Board(f"close-{uuid.uuid4().hex[:8]}", "two regions", "eu")
    await eu.create_board(board)
    rng, sent = random.Random(5), {"eu": Sent(), "us": Sent()}
    for region, name in ((eu, "eu"), (us, "us")):
        await _send_batch(region, board, rng, sent[name], 60)

    assert await lifecycle.begin_close(board.id, "season over", datetime.now(UTC))
    for name in ("eu", "us"):
        await eu.wait_until(lambda n=name: _markers_written(lifecycle, board.id, n), what=f"{name} markers")  # type: ignore[misc]
    for region, name in ((eu, "eu"), (us, "us")):
        await _send_batch(region, board, rng, sent[name], 20)  # accepted by stale intakes: late
    prefix, partitions = eu.settings.redis.key_prefix, eu.settings.kafka.partitions

    async def eu_cutoffs_only() -> bool:
        reached = await reached_cutoffs(eu.projection.redis, prefix, board.id)
        return sorted(reached) == sorted(f"eu:{p}" for p in range(partitions))

    await eu.wait_until(eu_cutoffs_only, what="every eu cutoff reached")
    record = await lifecycle.record(board.id)
    assert record is not None and record.board.status is BoardStatus.CLOSING  # us is cut off from eu

    await replicators(eu.settings, "us")  # the cut heals: us's awards and markers reach eu
    await eu.wait_until(lambda: _closed(lifecycle, board.id), within=90, what="CLOSED after the heal")

    cutoffs = {name: await _cutoffs(s, board.id) for name, s in (("eu", eu.settings), ("us", us.settings))}
    before = [a for name in ("eu", "us") for a, p, o in sent[name].accepted if o < cutoffs[name][p]]
    late = {
        str(a["matchId"]) for name in ("eu", "us") for a, p, o in sent[name].accepted if o > cutoffs[name][p]
    }
    assert len(late) == 40
    archived = [(e.user_id, e.score, e.version) for e in await _archived(results, board.id)]
    assert archived == _oracle(board, before)
    await eu.wait_until(
        lambda: _late_reconciled(eu, board.id, late), what="late awards of both regions reconciled"
    )
    record = await lifecycle.record(board.id)
    assert record is not None
    assert dict(record.cutoffs) == {
        f"{n}:{p}": o for n, offsets in cutoffs.items() for p, o in offsets.items()
    }
