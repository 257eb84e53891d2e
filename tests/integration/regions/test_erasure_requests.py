"""Asking for erasures in Cassandra (``regions.actions.erase``): recorded once per player (the same ask,
concurrent ones included, answers the first), lifted by an operator, and asked anew after a lift;
each change takes the player's next version and is in the erasure list once answered."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from cassandra.cluster import Session

from regions.actions.erase import lift_erasure, request_erasure
from regions.actions.home import ActionRefused
from regions.core.erasure import ErasureRequest
from regions.runtime.erasure_list import ErasureList
from regions.stores.cassandra.erasures import CassandraErasures
from schema.erasure import erasure_token


async def test_an_erasure_is_recorded_once_lifted_and_asked_anew(cassandra_session: Session) -> None:
    erasures = CassandraErasures(cassandra_session)
    user, now = f"gone-{uuid.uuid4().hex[:8]}", datetime.now(UTC).replace(microsecond=0)
    token = erasure_token(user)
    listed = ErasureList(lambda: erasures, interval_s=1)
    await listed.refresh()

    async def erased() -> bool:
        await listed.refresh()
        return listed.has(user)

    first, second = await asyncio.gather(
        request_erasure(erasures, ErasureRequest(user, "deleted"), region="eu", now=now),
        request_erasure(erasures, ErasureRequest(user, "again"), region="us", now=now + timedelta(seconds=1)),
    )
    assert first == second and first.token == token and first.user_id == user and first.version == 1
    assert await erased() and token in await erasures.queued(first.region)

    lifted = await lift_erasure(erasures, user, region="eu", now=now + timedelta(seconds=2))
    assert lifted.lifted_at is not None and lifted.version == 2 and not await erased()

    renewed = await request_erasure(erasures, ErasureRequest(user, "deleted for good"), region="us",
                                    now=now + timedelta(seconds=3))  # fmt: skip
    assert (renewed.reason, renewed.region, renewed.lifted_at, renewed.written) == ("deleted for good", "us", None, None)
    assert renewed.version == 3 and await erased()
    with pytest.raises(ActionRefused, match="userId"):
        await lift_erasure(erasures, f"never-{uuid.uuid4().hex[:8]}", region="eu", now=now)


async def test_an_erasure_or_lift_a_crash_left_unqueued_is_queued_when_asked_again(cassandra_session: Session) -> None:
    erasures, tag = CassandraErasures(cassandra_session), uuid.uuid4().hex[:8]
    user, region, elsewhere, now = f"c-{tag}", f"eu-{tag}", f"us-{tag}", datetime.now(UTC)
    token = erasure_token(user)
    # Recorded, then the asking process dies before queuing it: no worker would carry it out.
    assert await erasures.request(token, user, "deleted", region, now)
    assert token not in await erasures.queued(region)

    again = await request_erasure(erasures, ErasureRequest(user, "deleted"), region=elsewhere, now=now)
    assert again.version == 1 and again.region == region and again.outstanding
    assert token in await erasures.queued(region) and token not in await erasures.queued(elsewhere)
    assert not (await erasures.get(token) or again).unlogged

    # Its records written, the erasure is lifted, and the lifting process dies before queuing the lift.
    await erasures.dequeue(region, token)
    await erasures.record_written(token, {0: 7})
    assert await erasures.lift(await erasures.get(token) or again, now + timedelta(seconds=1))
    lifted = await lift_erasure(erasures, user, region=elsewhere, now=now + timedelta(seconds=2))
    assert lifted.version == 2 and lifted.outstanding and token in await erasures.queued(elsewhere)

    # Once the lift's records are written nothing is left: asking again queues nothing.
    await erasures.record_lift_written(token, elsewhere, {0: 9})
    assert not (await lift_erasure(erasures, user, region=region, now=now)).outstanding
    assert token not in await erasures.queued(region) and token not in await erasures.queued(elsewhere)
