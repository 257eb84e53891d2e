"""An erasure that the asking process recorded and died before queuing, carried out by the lifecycle
worker on its own (``regions.lifecycle.erasure``): its sweep finds the erasure asked in its region with
work left and queued nowhere, queues it, and the worker's passes, driven one by one, take it to DONE on
a real region (processor, projector, intake). Erasures of other regions stay theirs."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from cassandra.cluster import Session
from redis.asyncio import Redis

from regions.actions.erase_rows import PlayerStores
from regions.core.boards import Board
from regions.lifecycle.erasure import ErasureWorker
from regions.runtime.settings import Settings
from regions.stores.cassandra.erasures import CassandraErasures
from regions.stores.kafka.clients import make_producer, partitions_of
from regions.stores.redis.projection import RedisProjection
from schema.erasure import erasure_token
from tests.conftest import RegionFactory
from tests.harness import Region, points


async def test_an_erasure_a_crash_left_unqueued_is_found_and_carried_out_by_the_worker(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session, redis_client: Redis
) -> None:
    tag = uuid.uuid4().hex[:8]
    settings = topics.model_copy(update={
        "region": f"r{tag}",  # its own region: the sweep leaves other tests' erasures alone
        "intake": topics.intake.model_copy(update={"erasure_refresh_s": 0.2}),
    })  # fmt: skip
    region = await region_factory(settings, services=("processor", "projector", "intake"))
    board = Board(f"sw-{tag}", "Sweep", settings.region)
    await region.create_board(board)
    gone, stays, elsewhere = f"gone-{tag}", f"stays-{tag}", f"x{tag}"
    for user in (gone, stays):
        assert (await region.client.send(points(board.id, uuid.uuid4().hex, user, 5))).status_code == 202
        await region.wait_for_total(board.id, user, 5)

    erasures = CassandraErasures(cassandra_session)
    token, other = erasure_token(gone), erasure_token(f"other-{tag}")
    # Both recorded, neither queued: the asking processes died in between.
    long_ago = datetime.now(UTC) - timedelta(hours=1)  # the asking process died an hour ago
    assert await erasures.request(token, gone, "deleted", settings.region, long_ago)
    assert await erasures.request(other, f"other-{tag}", "deleted", elsewhere, datetime.now(UTC))

    worker = ErasureWorker(settings, RedisProjection(redis_client, settings.redis.key_prefix))
    assert await worker.sweep(erasures) == [token]
    assert token in await erasures.queued(settings.region) and other not in await erasures.queued(elsewhere)
    assert await worker.sweep(erasures) == []  # queued now: found once

    players = PlayerStores.on(cassandra_session)
    producer = make_producer(settings.kafka)
    partitions = await partitions_of(settings.kafka, settings.kafka.topic("awards"))
    await producer.start()
    try:

        async def done() -> bool:  # one pass of the worker, then where the erasure is
            await worker.tick(erasures, players, producer, partitions)
            entry = await erasures.get(token)
            return entry is not None and entry.completed_at is not None

        await Region.wait_until(done, 60, "the erasure DONE")
    finally:
        await producer.stop()
    assert await region.total_of(board.id, gone) is None and await region.total_of(board.id, stays) == 5
    assert token not in await erasures.queued(settings.region)
    refused = await region.client.send(points(board.id, uuid.uuid4().hex, gone, 1))
    assert refused.status_code == 410
