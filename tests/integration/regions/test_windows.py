"""Time windows on the real intake, processor, projector and lifecycle worker.

The lifecycle worker is started with its clock moved forward (``windows.clock_offset_s``, a test-only
setting production refuses) past a period's end plus its grace, or past a rolling day's end, while
the intake keeps the real clock: so the period rolls over (or the day expires) at once, and the
intake still accepts awards of the old period or day, which land after the cutoff and must be late.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import cast

from cassandra.cluster import Session

from regions.core.boards import Board, BoardStatus
from regions.core.periods import Period, WindowSpec, day_of, day_start_of, period_of
from regions.core.windows import encode_window
from regions.runtime.settings import Settings
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.periods import CassandraPeriods
from regions.stores.cassandra.results import CassandraResults
from regions.stores.redis.reads import RankReader
from schema.redis_keys import shard_of
from tests.clusters import Replicators
from tests.conftest import RegionFactory
from tests.harness import Region

DAY_MS = 86_400_000


def _settings(settings: Settings) -> Settings:
    return settings.model_copy(update={
        "lifecycle": settings.lifecycle.model_copy(
            update={"marker_delay_s": 0.0, "poll_interval_s": 0.2, "chunk_size": 2}
        ),
        "windows": settings.windows.model_copy(update={"max_future_s": 2 * 86_400.0}),
    })  # fmt: skip


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


async def _send(region: Region, board: Board, user: str, amount: int, at_ms: int) -> int:
    award = {"leaderboardId": board.id, "matchId": uuid.uuid4().hex, "userId": user, "awardType": "kill",
             "delta": amount, "occurredAt": _iso(at_ms)}  # fmt: skip
    response = await region.client.send(award)
    return response.status_code


async def _ranked(region: Region, board_id: str) -> list[tuple[str, float]]:
    """(member, score) of the board's projection in rank order."""
    region.projection.layouts.forget(board_id)
    reader = RankReader(region.projection, region.settings.redis.key_prefix, region.settings.region)
    board = Board(board_id, board_id, region.settings.region)  # (the rows do not depend on its rules)
    return [(m, float(s)) async for part in reader.ranked_rows(board, 1000) for m, s, *_ in part]


async def _record(region: Region, board_id: str, user: str) -> str | None:
    """The player's version record in the board's projection."""
    layout = await region.projection.layouts.live_one(board_id)
    assert layout is not None
    keys = layout.shard(region.settings.redis.key_prefix, shard_of(user, layout.shards))
    return cast(str | None, await region.projection.redis.hget(keys.bucket(user), user))


async def _windowed(
    region_factory: RegionFactory, settings: Settings, spec: WindowSpec, name: str
) -> tuple[Region, Board]:
    """A region with processor, projector and intake (the lifecycle worker is the test's to start)
    and a board of that window homed there."""
    region = await region_factory(_settings(settings), services=("processor", "projector", "intake"))
    board = Board(f"{name}-{uuid.uuid4().hex[:8]}", name, region.settings.region, window=encode_window(spec))
    await region.create_board(board)
    return region, board


def _clock_offset(target_ms: int) -> dict[str, str]:
    """Settings that put a process's window clock at ``target_ms`` now."""
    return {"LB_WINDOWS__CLOCK_OFFSET_S": str((target_ms - time.time() * 1000) / 1000)}


async def test_a_period_rolls_over_closes_and_archives_while_the_next_one_ranks(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session
) -> None:
    spec = WindowSpec(Period.DAILY, time_zone="Asia/Kolkata")
    region, board = await _windowed(region_factory, topics, spec, "daily")
    now = int(time.time() * 1000)
    today = period_of(spec, now)
    tomorrow = period_of(spec, today.end_ms)
    sent = [("ann", 5, today.start_ms), ("bob", 7, now), ("ann", 4, today.end_ms - 1),  # the last ms of today
            ("cyd", 9, today.end_ms), ("ann", 1, tomorrow.start_ms + 1000)]  # fmt: skip
    for user, amount, at in sent:
        assert await _send(region, board, user, amount, at) == 202
    await region.wait_for_total(f"{board.id}@{today.key}", "ann", 9)
    await region.wait_for_total(f"{board.id}@{tomorrow.key}", "ann", 1)

    # the worker's clock: today has ended and its grace has passed; tomorrow has not ended
    grace_ms = int(region.settings.windows.grace_s * 1000)
    await region.start("lifecycle", overrides=_clock_offset(today.end_ms + grace_ms + 2_000))
    periods, results = CassandraPeriods(cassandra_session), CassandraResults(cassandra_session)

    async def closed() -> bool:
        found = await periods.between(board.id, today.key, today.key)
        return today.key in found and found[today.key].status is BoardStatus.CLOSED

    await region.wait_until(closed, within=60, what=f"period {today.key} CLOSED")
    # the intake's clock still takes today's awards: one now lands after the cutoff
    assert await _send(region, board, "dan", 50, now) == 202
    assert await _send(region, board, "ann", 2, tomorrow.start_ms + 2000) == 202
    await region.wait_for_total(f"{board.id}@{tomorrow.key}", "ann", 3)

    header = await results.get(f"{board.id}@{today.key}", 1)
    assert header is not None and header.player_count == 2 and header.chunk_count == 1
    chunks = await results.chunks(header.board_id, 1, range(header.chunk_count))
    assert [(e.user_id, e.score, e.version) for e in chunks[0]] == [("ann", 9, 2), ("bob", 7, 1)]
    record = (await periods.between(board.id, today.key, today.key))[today.key]
    assert record.result_version == 1 and len(record.cutoffs) == region.settings.kafka.partitions
    assert (record.start_ms, record.end_ms) == (today.start_ms, today.end_ms)
    assert await region.total_of(f"{board.id}@{today.key}", "dan") is None
    assert sorted(m for m, _ in await _ranked(region, f"{board.id}@{tomorrow.key}")) == ["ann", "cyd"]
    # the next period is live and not closing
    assert tomorrow.key not in await periods.between(board.id, tomorrow.key, tomorrow.key)

    async def late() -> bool:
        return any(r.reason == "late" and r.award is not None and r.award.user_id == "dan"
                   for r in await region.reconciliation())  # fmt: skip

    await region.wait_until(late, what="the late award reconciled")


async def test_rolling_expiry_removes_exactly_the_points_of_the_day_that_left(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session
) -> None:
    spec = WindowSpec(Period.ROLLING, 2, "America/New_York")
    region, board = await _windowed(region_factory, topics, spec, "roll")
    now = int(time.time() * 1000)
    today = day_of(spec, now)
    yesterday_at = day_start_of(spec, today - 1) + 60_000
    for user, amount, at in [("alice", 10, yesterday_at), ("alice", 5, now), ("bob", 7, yesterday_at),
                             ("carol", 3, now)]:  # fmt: skip
        assert await _send(region, board, user, amount, at) == 202
    await region.wait_for_total(board.id, "alice", 15)
    await region.wait_for_total(board.id, "bob", 7)
    await region.wait_for_total(board.id, "carol", 3)
    carol_before = await _record(region, board.id, "carol")

    # the worker's clock: tomorrow has begun, so yesterday has left the two-day window
    await region.start("lifecycle", overrides=_clock_offset(day_start_of(spec, today + 1) + 1_000))
    await region.wait_for_total(board.id, "alice", 5, within=60)
    await region.wait_until(lambda: _absent(region, board.id, "bob"), what="bob leaves the board")

    assert sorted(m for m, _ in await _ranked(region, board.id)) == ["alice", "carol"]
    assert await _record(region, board.id, "carol") == carol_before  # not visited
    bob = await _record(region, board.id, "bob")
    assert bob == "2|"  # removed at a newer version than its last total
    # yesterday's award, accepted by an intake whose clock has not passed midnight yet, is late
    assert await _send(region, board, "dave", 4, yesterday_at) == 202
    assert await _send(region, board, "carol", 1, now) == 202
    await region.wait_for_total(board.id, "carol", 4)
    assert await region.total_of(board.id, "dave") is None
    reconciled = [
        r for r in await region.reconciliation() if r.award is not None and r.award.user_id == "dave"
    ]
    assert [r.reason for r in reconciled] == ["late"]


async def _absent(region: Region, board_id: str, user: str) -> bool:
    return user not in [m for m, _ in await _ranked(region, board_id)]


async def test_the_intake_refuses_awards_of_closed_periods_and_from_the_far_future(
    region_factory: RegionFactory, topics: Settings
) -> None:
    region = await region_factory(topics, services=("intake",))
    spec = WindowSpec(Period.WEEKLY, time_zone="Europe/Stockholm")
    board = Board(
        f"weekly-{uuid.uuid4().hex[:8]}", "weekly", region.settings.region, window=encode_window(spec)
    )
    await region.create_board(board)
    now = int(time.time() * 1000)
    last_week = period_of(spec, period_of(spec, now).start_ms - 1)
    award = {"leaderboardId": board.id, "matchId": "m", "userId": "u", "awardType": "kill", "delta": 1}
    old = await region.client.send({**award, "occurredAt": _iso(last_week.end_ms - 1)})
    if last_week.end_ms + region.settings.windows.grace_s * 1000 <= now:  # not within last week's grace
        assert old.status_code == 409, old.text
        error = old.json()["error"]
        assert error["code"] == "period_closed"
        assert error["fields"][0]["field"] == "occurredAt" and last_week.key in error["fields"][0]["rule"]
    ahead = await region.client.send({**award, "occurredAt": _iso(now + 3_600_000)})
    assert ahead.status_code == 400
    assert ahead.json()["error"]["fields"] == [
        {"field": "occurredAt", "rule": "must be at most 300 s after the intake's clock"}
    ]
    assert (await region.client.send({**award, "occurredAt": _iso(now)})).status_code == 202


async def test_rolling_expiry_reaches_both_regions_and_they_agree(
    region_factory: RegionFactory, eu_us: tuple[Settings, Settings], replicators: Replicators
) -> None:
    eu_settings, us_settings = (_settings(s) for s in eu_us)
    us_settings = us_settings.model_copy(  # one Redis server here: each region's projection its own keys
        update={
            "redis": us_settings.redis.model_copy(update={"key_prefix": us_settings.redis.key_prefix + "us"})
        }
    )
    eu = await region_factory(eu_settings, services=("processor", "projector", "intake"))
    us = await region_factory(us_settings, services=("processor", "projector", "intake"))
    await replicators(eu.settings, "us")
    await replicators(us.settings, "eu")
    spec = WindowSpec(Period.ROLLING, 2, "Asia/Tokyo")
    board = Board(f"roll-{uuid.uuid4().hex[:8]}", "last 2 days", "eu", window=encode_window(spec))
    await eu.create_board(board)
    now = int(time.time() * 1000)
    today = day_of(spec, now)
    yesterday_at = day_start_of(spec, today - 1) + 60_000
    for region, user, amount, at in [(eu, "alice", 10, yesterday_at), (us, "alice", 5, now),
                                     (us, "bob", 7, yesterday_at), (us, "carol", 3, now)]:  # fmt: skip
        assert await _send(region, board, user, amount, at) == 202
    for region in (eu, us):
        for user, total in (("alice", 15), ("bob", 7), ("carol", 3)):
            await region.wait_for_total(board.id, user, total, within=60)

    await eu.start(
        "lifecycle", overrides=_clock_offset(day_start_of(spec, today + 1) + 1_000)
    )  # the home region
    for region in (eu, us):
        await region.wait_for_total(board.id, "alice", 5, within=60)
        await region.wait_until(
            lambda r=region: _absent(r, board.id, "bob"), what=f"{region.settings.region}: bob leaves"
        )  # type: ignore[misc]
    assert await _ranked(eu, board.id) == await _ranked(us, board.id)
    assert sorted(m for m, _ in await _ranked(us, board.id)) == ["alice", "carol"]
    # yesterday's award, accepted by us after both regions expired yesterday, is late in both
    assert await _send(us, board, "dave", 4, yesterday_at) == 202
    assert await _send(us, board, "carol", 1, now) == 202
    for region in (eu, us):
        await region.wait_for_total(board.id, "carol", 4, within=60)
        assert await region.total_of(board.id, "dave") is None

        async def late(r: Region = region) -> bool:
            return any(x.reason == "late" and x.award is not None and x.award.user_id == "dave"
                       for x in await r.reconciliation())  # fmt: skip

        await region.wait_until(late, what=f"{region.settings.region}: dave's award late")


async def test_closing_a_board_with_periods_closes_its_current_period_too(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session
) -> None:
    spec = WindowSpec(Period.MONTHLY, time_zone="Europe/Stockholm")
    region, board = await _windowed(region_factory, topics, spec, "monthly")
    now = int(time.time() * 1000)
    this_month = period_of(spec, now)
    for user, amount in (("ann", 3), ("bob", 8)):
        assert await _send(region, board, user, amount, now) == 202
    await region.wait_for_total(f"{board.id}@{this_month.key}", "bob", 8)
    lifecycle, periods = CassandraLifecycle(cassandra_session), CassandraPeriods(cassandra_session)
    assert await lifecycle.begin_close(board.id, "season over", datetime.now(UTC))
    await region.start("lifecycle")

    async def both_closed() -> bool:
        record = await lifecycle.record(board.id)
        found = await periods.between(board.id, this_month.key, this_month.key)
        return (record is not None and record.board.status is BoardStatus.CLOSED
                and this_month.key in found and found[this_month.key].status is BoardStatus.CLOSED)  # fmt: skip

    await region.wait_until(both_closed, within=60, what="the board and its current period CLOSED")
    header = await CassandraResults(cassandra_session).get(f"{board.id}@{this_month.key}", 1)
    assert header is not None and header.player_count == 2
