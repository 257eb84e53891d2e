"""The erasure list read incrementally from Cassandra (``regions.runtime.erasure_list``): erasures and
lifts asked at once in several regions, with clocks hours apart, reach a running reader at its next
refresh and a reader started afresh alike, exactly; each region's lane of the change log is numbered
without a gap; a reader waits at an entry that has not reached it while a later one has; a change
that a crash left out of the log is appended when asked again; and a real intake refuses an erased
player and takes them again after the lift."""

from __future__ import annotations

import asyncio
import random
import uuid
from datetime import UTC, datetime, timedelta

from cassandra.cluster import Session

from regions.actions.erase import lift_erasure, request_erasure
from regions.core.boards import Board
from regions.core.erasure import ErasureRequest
from regions.runtime.erasure_list import ErasureList
from regions.runtime.settings import Settings
from regions.stores.cassandra.erasures import CassandraErasures
from schema.erasure import erasure_token
from tests.conftest import RegionFactory
from tests.harness import Region, points


def _reader(erasures: CassandraErasures) -> ErasureList:
    return ErasureList(lambda: erasures, interval_s=1)


async def _truth(erasures: CassandraErasures, users: list[str]) -> set[str]:
    """The players whose erasure stands, from their rows."""
    entries = await asyncio.gather(*(erasures.get(erasure_token(u)) for u in users))
    return {u for u, e in zip(users, entries, strict=True) if e is not None and e.lifted_at is None}


async def test_erasures_and_lifts_asked_at_once_in_several_regions_reach_every_reader_exactly(
    cassandra_session: Session,
) -> None:
    erasures, tag, rng = CassandraErasures(cassandra_session), uuid.uuid4().hex[:8], random.Random(7)
    regions = {f"eu-{tag}": datetime.now(UTC), f"us-{tag}": datetime.now(UTC) - timedelta(hours=3)}  # clocks apart
    users = [f"u{i}-{tag}" for i in range(40)]
    running = _reader(erasures)
    await running.refresh()  # its whole read, before any of these changes

    async def erase(user: str) -> None:
        region = rng.choice(list(regions))
        await request_erasure(erasures, ErasureRequest(user, "deleted"), region=region, now=regions[region])

    async def lift(user: str) -> None:
        region = rng.choice(list(regions))
        await lift_erasure(erasures, user, region=region, now=regions[region])

    await asyncio.gather(*(erase(u) for u in users))
    lifted = users[::2]
    await asyncio.gather(*(lift(u) for u in lifted), *(erase(u) for u in users[1::2]))  # a repeat: no change
    await asyncio.gather(*(erase(u) for u in lifted[::2]))  # erased anew after the lift
    expected = set(users[1::2]) | set(lifted[::2])
    assert await _truth(erasures, users) == expected

    await running.refresh()
    started = _reader(erasures)
    await started.refresh()
    for reader in (running, started):
        assert {u for u in users if reader.has(u)} == expected
    changes = 0
    for lane in regions:
        sequences = [c.sequence for c in await erasures.log.read(lane, 0, 1000)]
        assert sequences == list(range(len(sequences)))  # contiguous, whatever raced
        changes += len(sequences)
    assert changes == len(users) + len(lifted) + len(lifted[::2])  # one entry per change, none per repeat


async def test_a_reader_waits_at_an_entry_not_here_yet_and_never_skips_it(cassandra_session: Session) -> None:
    erasures, lane = CassandraErasures(cassandra_session), f"ap-{uuid.uuid4().hex[:8]}"
    first, second = f"a-{lane}", f"b-{lane}"
    reader = _reader(erasures)
    await reader.refresh()
    insert = cassandra_session.prepare(
        "INSERT INTO erasure_changes (lane, page, sequence, player_token, version, erased) VALUES (?, 0, ?, ?, 1, true)"
    )
    # As a region far away would see a lane whose entry 0 is still on its way: entry 1 has arrived.
    cassandra_session.execute("INSERT INTO erasure_lanes (scope, lane) VALUES ('lanes', %s)", (lane,))
    cassandra_session.execute(insert, (lane, 1, erasure_token(second)))
    await reader.refresh()
    assert not reader.has(second)
    cassandra_session.execute(insert, (lane, 0, erasure_token(first)))
    await reader.refresh()
    assert reader.has(first) and reader.has(second)


async def test_a_change_left_out_of_the_log_by_a_crash_is_appended_when_asked_again(cassandra_session: Session) -> None:
    erasures, tag = CassandraErasures(cassandra_session), uuid.uuid4().hex[:8]
    user, region = f"c-{tag}", f"eu-{tag}"
    reader = _reader(erasures)
    await reader.refresh()
    # The row is recorded, then the process dies before the change is in the log.
    assert await erasures.request(erasure_token(user), user, "deleted", region, datetime.now(UTC))
    await reader.refresh()
    assert not reader.has(user)
    entry = await request_erasure(erasures, ErasureRequest(user, "deleted"), region=region, now=datetime.now(UTC))
    assert entry.version == 1  # the standing erasure, now in the log
    await reader.refresh()
    assert reader.has(user)
    assert not (await erasures.get(entry.token) or entry).unlogged


async def test_an_intake_refuses_an_erased_player_and_takes_them_again_after_the_lift(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session
) -> None:
    settings = topics.model_copy(update={"intake": topics.intake.model_copy(update={"erasure_refresh_s": 0.2})})
    region = await region_factory(settings, services=("intake",))
    board = Board(f"el-{uuid.uuid4().hex[:8]}", "Erasures", settings.region)
    await region.create_board(board)
    tag = uuid.uuid4().hex[:8]
    erasures, user, asked_in = CassandraErasures(cassandra_session), f"gone-{tag}", f"eu-{tag}"  # no worker carries it out

    async def answered(status: int) -> bool:
        return (await region.client.send(points(board.id, uuid.uuid4().hex, user, 1))).status_code == status

    assert await answered(202)
    await request_erasure(erasures, ErasureRequest(user, "deleted"), region=asked_in, now=datetime.now(UTC))
    await Region.wait_until(lambda: answered(410), 10, "410 player_erased")
    await lift_erasure(erasures, user, region=asked_in, now=datetime.now(UTC))
    await Region.wait_until(lambda: answered(202), 10, "202 after the lift")
