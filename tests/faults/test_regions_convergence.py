"""Two regions on two real Kafka clusters, each with all its processes and a replicator from the
other: awards flow into both intakes, the same award is sent to both, and the link from ``us`` to
``eu`` is cut (eu's replicator from us is frozen, as a partition leaves it: it copies nothing and
nothing tells eu why). During the cut each region's REGIONAL projection stays fresh for its own
awards, eu's asOf says ``us`` is stale within the threshold, and eu's projection (HOME of the board)
lacks us's newest awards. After the heal every region's totals equal the oracle folded from the
202-acknowledged awards (none lost, none counted twice), every acknowledged position is covered, and
the home region's audit holds exactly one row per distinct award.

Regions share Redis and Cassandra: ``us``'s projection lives in Redis database 1, with the same key
prefix, so a gateway of ``us`` reaches ``eu``'s projection by ``settings.regions["eu"].redis_url``
exactly as across machines."""

from __future__ import annotations

import asyncio
import itertools
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from cassandra.cluster import Session
from redis.asyncio import Redis

from regions.cassandra_catalog import CassandraCatalog
from regions.core.boards import Board, SortOrder, TiePolicy
from regions.core.freshness import FreshnessRule, RegionStatus
from regions.core.reads import AsOf
from regions.redis_projection import RedisProjection, connect_redis
from regions.redis_reads import RankReader
from regions.settings import RedisSettings, RegionEndpoint, Settings
from tests.clusters import Replicators, delete_before, send_awards
from tests.conftest import RegionFactory
from tests.harness import Region, with_free_ports

STALE_AFTER_S = 5.0  # threshold of the freshness rule (the setting's default)
HEAL_WITHIN_S = 60.0  # stated bound: after the heal, every region equals the oracle within it


def _in_db(url: str, db: int) -> str:
    return f"{url.rsplit('/', 1)[0]}/{db}"


def _regions(eu: Settings, us: Settings, tmp_path: Path) -> tuple[Settings, Settings]:
    """eu and us with their Redis (us: database 1), processor state and ports of their own."""
    us_redis = us.redis.model_copy(update={"url": _in_db(eu.redis.url, 1)})
    endpoints = {
        "eu": RegionEndpoint(kafka_bootstrap_servers=eu.kafka.bootstrap_servers, redis_url=eu.redis.url),
        "us": RegionEndpoint(kafka_bootstrap_servers=us.kafka.bootstrap_servers, redis_url=us_redis.url),
    }

    def region(s: Settings, name: str, redis_settings: RedisSettings) -> Settings:
        store = s.processor.model_copy(update={"store_dir": str(tmp_path / f"state-{name}")})
        return with_free_ports(
            s.model_copy(update={"regions": endpoints, "processor": store, "redis": redis_settings})
        )

    return region(eu, "eu", eu.redis), region(us, "us", us_redis)


class Oracle:
    """The awards the intakes acknowledged (202), by event id, and what each region's intake said."""

    def __init__(self) -> None:
        self.amounts: dict[str, tuple[str, int]] = {}  # event id -> (user, amount)
        self.acked: dict[tuple[str, int], int] = {}  # (accepting region, partition) -> highest offset
        self.acks = 0

    async def send(self, region: Region, board: str, user: str, match: str, amount: int) -> None:
        payload = {"leaderboardId": board, "matchId": match, "userId": user, "awardType": "points",
                   "delta": amount}  # fmt: skip
        for _ in range(5):  # an unknown outcome is retried with the same award, as a game service does
            response = await region.client.send(payload)
            if response.status_code < 500:
                break
        assert response.status_code == 202, response.text
        for ack in response.json()["accepted"]:
            self.acks += 1
            self.amounts[ack["eventId"]] = (user, amount)
            key = (ack["region"], ack["partition"])
            self.acked[key] = max(self.acked.get(key, -1), ack["offset"])

    def totals(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for user, amount in self.amounts.values():
            found[user] = found.get(user, 0) + amount
        return found


async def _problems(region: Region, board: str, oracle: Oracle) -> list[str]:
    """How ``region``'s projection differs from the oracle (totals and positions); empty: converged."""
    found = []
    for user, total in sorted(oracle.totals().items()):
        got = await region.total_of(board, user)
        if got != total:
            found.append(f"{region.settings.region}: {user} has {got}, the oracle {total}")
    positions = (await region.projection.positions()).offsets
    found += [
        f"{region.settings.region}: asOf {key} is {positions.get(key)}, acknowledged {offset}"
        for key, offset in sorted(oracle.acked.items())
        if positions.get(key, -1) < offset
    ]
    return found


def _status(as_of: AsOf, region: str) -> RegionStatus:
    return next(s for s in as_of.regions if s.region == region)


@pytest.fixture
async def us_redis(eu_us: tuple[Settings, Settings]) -> AsyncIterator[Redis]:
    client = connect_redis(eu_us[0].redis.model_copy(update={"url": _in_db(eu_us[0].redis.url, 1)}))
    try:
        yield client
    finally:
        prefix = eu_us[0].redis.key_prefix
        async for key in client.scan_iter(match=f"{prefix}:*", count=1000):
            await client.delete(key)
        await client.aclose()


async def test_two_regions_converge_after_a_cut_with_one_row_of_audit_per_award(
    eu_us: tuple[Settings, Settings],
    replicators: Replicators,
    redis_client: Redis,
    us_redis: Redis,
    cassandra_session: Session,
    tmp_path: Path,
) -> None:
    eu_settings, us_settings = _regions(*eu_us, tmp_path)
    catalog = CassandraCatalog(cassandra_session)
    regions = []
    for settings, redis in ((eu_settings, redis_client), (us_settings, us_redis)):
        logs = tmp_path / settings.region
        logs.mkdir()
        regions.append(Region(settings, catalog, RedisProjection(redis, settings.redis.key_prefix), logs))
    eu, us = regions
    try:
        await asyncio.gather(eu.start(), us.start())
        from_us = await replicators(eu_settings, "us")
        await replicators(us_settings, "eu")
        board = Board("regions-board", "Regions", "eu", SortOrder.DESC, tie_policy=TiePolicy.USER_ID)
        await eu.create_board(board)
        rule = FreshnessRule(("eu", "us"), eu_settings.kafka.partitions, STALE_AFTER_S)
        readers = {
            r.settings.region: RankReader(r.projection, r.settings.redis.key_prefix, r.settings.region, rule)
            for r in regions
        }

        oracle, matches = Oracle(), itertools.count()
        users = [f"player-{i}" for i in range(6)]

        async def flow(rounds: int) -> None:
            """Awards into both regions, and every fifth award sent to both (one event)."""
            for _ in range(rounds):
                n = next(matches)
                user, amount = users[n % len(users)], 1 + n % 7
                await oracle.send(eu if n % 2 else us, board.id, user, f"m{n}", amount)
                if n % 5 == 0:
                    await oracle.send(us if n % 2 else eu, board.id, user, f"m{n}", amount)

        await flow(40)  # the catalog is global: us's intake resolves the board created in eu
        await Region.wait_until(
            lambda: _converged(eu, us, board.id, oracle),
            within=HEAL_WITHIN_S,
            what="convergence before the cut",
        )
        distinct_before = len(oracle.amounts)
        assert oracle.acks > distinct_before  # some awards were acknowledged by both regions

        from_us.signal(signal.SIGSTOP)  # the cut: eu hears nothing more from us
        cut_over = asyncio.Event()
        flowing = asyncio.create_task(_flow_until(flow, cut_over))

        async def cut_seen() -> bool:
            """eu says us is stale; REGIONAL stays fresh for what each region hears (us still hears eu)."""
            eu_as_of, us_as_of = await readers["eu"].as_of(), await readers["us"].as_of()
            fresh = [_status(eu_as_of, "eu"), _status(us_as_of, "us"), _status(us_as_of, "eu")]
            return _status(eu_as_of, "us").stale and not any(s.stale for s in fresh)

        await Region.wait_until(
            cut_seen, within=STALE_AFTER_S * 6, what="us stale in eu's asOf, the rest fresh"
        )
        cut_over.set()
        await flowing
        # eu's projection (the board's HOME) lacks us's awards of the cut, and says us is stale.
        eu_as_of = await readers["eu"].as_of()
        cut_us = {k: o for k, o in oracle.acked.items() if k[0] == "us"}
        assert any(eu_as_of.positions.get(k, -1) < o for k, o in cut_us.items())
        assert await _problems(eu, board.id, oracle)
        assert _status(eu_as_of, "us").stale and not _status(eu_as_of, "us").gap

        from_us.signal(signal.SIGCONT)  # heal
        await Region.wait_until(
            lambda: _converged(eu, us, board.id, oracle),
            within=HEAL_WITHIN_S,
            what="convergence after the heal",
        )
        for reader in readers.values():
            as_of = await reader.as_of()
            assert [s.region for s in as_of.regions] == ["eu", "us"]
            assert not any(s.stale or s.gap for s in as_of.regions), as_of.regions

        async def audited() -> bool:
            rows = cassandra_session.execute(
                "SELECT event_id, amount FROM award_history WHERE board_id = %s ALLOW FILTERING", (board.id,)
            )
            return {r.event_id: r.amount for r in rows} == {e: a for e, (_, a) in oracle.amounts.items()}

        await Region.wait_until(audited, within=HEAL_WITHIN_S, what="one audit row per distinct award")

        async def left_to_home() -> bool:
            """us applied every award and left the history to eu (its sink may still be reading)."""
            return await _metric(us, "lb_audit_left_to_home_total") >= len(oracle.amounts)

        await Region.wait_until(
            left_to_home, within=HEAL_WITHIN_S, what="us's sink leaving every award to eu"
        )
    finally:
        for region in regions:
            for service in region.processes:
                print(f"---- {region.settings.region} {service} log tail\n{region.tail(service)}")
            await region.close()


async def _flow_until(flow: Callable[[int], Awaitable[None]], done: asyncio.Event) -> None:
    """Keep awards flowing into both regions until ``done``."""
    while not done.is_set():
        await flow(2)


async def _converged(eu: Region, us: Region, board: str, oracle: Oracle) -> bool:
    return not (await _problems(eu, board, oracle) + await _problems(us, board, oracle))


async def _metric(region: Region, name: str) -> float:
    async with httpx.AsyncClient() as http:
        text = (await http.get(region.health_url("audit") + "/metrics")).text
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))


async def test_awards_deleted_before_they_were_replicated_show_as_a_gap_in_as_of(
    eu_us: tuple[Settings, Settings], replicators: Replicators, region_factory: RegionFactory
) -> None:
    """us deletes awards (retention) before eu's replicator copied them: eu's asOf says ``gap`` for
    us, never passes them silently."""
    eu_settings, us_settings = eu_us
    eu = await region_factory(eu_settings, services=("processor", "projector"))
    rule = FreshnessRule(("eu", "us"), eu_settings.kafka.partitions, STALE_AFTER_S)
    reader = RankReader(eu.projection, eu_settings.redis.key_prefix, "eu", rule)
    sent = await send_awards(us_settings, 20, partition=0)
    await delete_before(us_settings, 0, 12)
    await replicators(eu_settings, "us")

    async def passed_with_a_gap() -> bool:
        as_of = await reader.as_of()
        return as_of.positions.get(("us", 0), -1) >= sent[-1].offset and _status(as_of, "us").gap

    await Region.wait_until(passed_with_a_gap, within=60, what="us's partition 0 passed, with a gap")
    assert not _status(await reader.as_of(), "eu").gap


async def test_the_convergence_check_fails_when_repeats_are_counted_again(
    eu_us: tuple[Settings, Settings],
    replicators: Replicators,
    redis_client: Redis,
    us_redis: Redis,
    cassandra_session: Session,
    tmp_path: Path,
) -> None:
    """Negative control: with the processors' dedupe switched off (the test-only setting
    ``processor.fault_forget_event_ids``), the same award sent to both regions is counted twice, and
    the check used above names it."""
    eu_settings, us_settings = _regions(*eu_us, tmp_path)
    catalog = CassandraCatalog(cassandra_session)
    regions = []
    for settings, redis in ((eu_settings, redis_client), (us_settings, us_redis)):
        logs = tmp_path / settings.region
        logs.mkdir()
        region = Region(settings, catalog, RedisProjection(redis, settings.redis.key_prefix), logs)
        region.env["LB_PROCESSOR__FAULT_FORGET_EVENT_IDS"] = "true"
        regions.append(region)
    eu, us = regions
    try:
        await asyncio.gather(
            eu.start("processor", "projector", "intake"), us.start("processor", "projector", "intake")
        )
        await replicators(eu_settings, "us")
        await replicators(us_settings, "eu")
        board = Board("negative-board", "Negative control", "eu")
        await eu.create_board(board)
        oracle = Oracle()
        for n in range(6):
            for region in (eu, us):  # the same award, acknowledged by both regions
                await oracle.send(region, board.id, "ann", f"m{n}", 1)

        async def counted_twice() -> bool:
            return (await eu.total_of(board.id, "ann") or 0) > oracle.totals()["ann"]

        await Region.wait_until(counted_twice, within=HEAL_WITHIN_S, what="a total above the oracle")
        [problem] = [p for p in await _problems(eu, board.id, oracle) if "ann" in p]
        assert problem.startswith("eu: ann has ") and problem.endswith(f"the oracle {oracle.totals()['ann']}")
    finally:
        for region in regions:
            for service in region.processes:
                print(f"---- {region.settings.region} {service} log tail\n{region.tail(service)}")
            await region.close()
