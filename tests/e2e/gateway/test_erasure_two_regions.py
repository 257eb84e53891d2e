"""End to end on two whole regions (eu and us, each with its processor, projector, audit sink,
intake, lifecycle worker and gateway, and a replicator from the other): a player with awards in both
regions, on an all-time, a sharded, a windowed, a closed and an approximate board (an item named
like them among its candidates), with a profile, an audit history and a moderation action, is
erased through us's gateway. Then every store is scanned for the user id: every key, member and
field of both regions' Redis, every key and value of every processor store, every compacted topic's
last record per key (what compaction keeps), every row of every Cassandra table: no hit. The raw
topics keep the player's awards only until their retention: with retention and compaction shortened, every record of every topic of
both regions, read from the beginning, is found free of the player too. Everyone else's totals are
unchanged; the intakes refuse the player (410); a rebuild of eu's projection and a cold restore of
us's processor do not bring them back.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from cassandra.cluster import Session
from rocksdict import AccessType, Rdict

from regions.core.approximate import ApproximateSpec
from regions.core.boards import Board
from regions.core.periods import Period, WindowSpec
from regions.core.profiles import Profile
from regions.core.windows import encode_window
from regions.runtime.settings import Settings
from regions.stores.cassandra.profiles import CassandraProfiles
from regions.stores.kafka.clients import make_consumer, partition_of_key
from regions.stores.kafka.topics import _topic_config, platform_topics
from schema.records import totals_key
from tests.clusters import read_all
from tests.e2e.gateway.conftest import GatewayProcess
from tests.e2e.gateway.two_regions import module_regions
from tests.harness import Region, points
from tests.multi_region import Deployment

WITHIN_S = 90.0
ADMIN = {"Authorization": "Bearer dev-admin-token"}
TOP = """query($b: ID!, $scope: Scope) { leaderboard(id: $b) { status top(k: 50, scope: $scope) {
  entries { userId score } } } }"""
PERIOD_TOP = """query($b: ID!, $scope: Scope) { leaderboard(id: $b) { period { top(k: 50, scope: $scope) {
  entries { userId score } } } } }"""
ERASE = """mutation($u: ID!) { erasePlayer(userId: $u, reason: "account deleted") { status region steps { store status } } }"""
ERASURE = """query($u: ID!) { erasure(userId: $u) { status completedAt rawRecordsUntil steps { store status detail } } }"""
EXPORT = """query($u: ID!) { playerExport(userId: $u) }"""

# eu and us with every service (the audit sink writes the history erased), a gateway each.
regions = module_regions(
    "erasure-two-regions", services=("processor", "projector", "audit", "intake", "lifecycle"),
    env={"LB_LIFECYCLE__POLL_INTERVAL_S": "0.2", "LB_LIFECYCLE__MARKER_DELAY_S": "0",
         "LB_INTAKE__ERASURE_REFRESH_S": "0.5"},
)  # fmt: skip


async def _gql(gateway: GatewayProcess, query: str, **variables: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=60) as http:
        response = await http.post(gateway.url, json={"query": query, "variables": variables}, headers=ADMIN)
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    return body["data"]  # type: ignore[no-any-return]


async def _standings(d: Deployment, board: Board, query: str) -> dict[tuple[str, str], dict[str, int]]:
    """(gateway region, scope) -> user -> score, of every read of the board."""
    found = {}
    for name, gateway in d.gateways.items():
        for scope in ("HOME", "REGIONAL"):
            data = (await _gql(gateway, query, b=board.id, scope=scope))["leaderboard"]
            page = data["period"]["top"] if query is PERIOD_TOP else data["top"]
            found[(name, scope)] = {e["userId"]: e["score"] for e in page["entries"]}
    return found


async def _send(region: Region, board: Board, user: str, match: str, amount: int) -> httpx.Response:
    award = {**points(board.id, match, user, amount), "occurredAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")}
    return await region.client.send(award)


async def test_an_erased_player_is_in_no_store_of_either_region(regions: Deployment, cassandra_session: Session) -> None:
    d = regions
    eu, us = d.regions["eu"], d.regions["us"]
    zed = f"zed-{uuid.uuid4().hex[:12]}"
    tag = uuid.uuid4().hex[:8]
    plain = Board(f"er-a-{tag}", "All time", "eu")
    sharded = Board(f"er-s-{tag}", "Sharded", "eu", shards=4)
    daily = Board(f"er-d-{tag}", "Daily", "eu", window=encode_window(WindowSpec(Period.DAILY)))
    closed = Board(f"er-c-{tag}", "Closed", "eu")
    trending = Board(f"er-t-{tag}", "Trending", "eu", approximate=ApproximateSpec(50, 0.01, 0.01))
    boards = (plain, sharded, daily, closed, trending)
    for board in boards:
        await eu.create_board(board)
        for i, (region, user) in enumerate(((eu, zed), (us, zed), (eu, "ann"), (us, "bob"), (eu, "cat"))):
            response = await _send(region, board, user, f"m{i}", 10 + i)
            assert response.status_code == 202, response.text
    await CassandraProfiles(cassandra_session).put(Profile(zed, "Zed"))
    await _gql(d.gateways["eu"], """mutation($b: ID!, $u: ID!) { hidePlayer(leaderboardId: $b, userId: $u,
        reason: "check") { sequence } }""", b=plain.id, u=zed)  # fmt: skip
    expected = {"ann": 12, "bob": 13, "cat": 14}

    async def everyone_in(board: Board, query: str = TOP, hidden: bool = False) -> bool:
        return all(s == {**expected, **({} if hidden else {zed: 21})} for s in (await _standings(d, board, query)).values())

    await Region.wait_until(lambda: everyone_in(plain, hidden=True), WITHIN_S, "plain board read")
    await Region.wait_until(lambda: everyone_in(sharded), WITHIN_S, "sharded board read")
    await Region.wait_until(lambda: everyone_in(daily, PERIOD_TOP), WITHIN_S, "daily board read")
    await Region.wait_until(lambda: everyone_in(closed), WITHIN_S, "closed board read")
    await Region.wait_until(lambda: everyone_in(trending), WITHIN_S, "approximate board read")
    await _gql(d.gateways["eu"], """mutation($b: ID!) { closeLeaderboard(id: $b) { status } }""", b=closed.id)

    async def is_closed() -> bool:
        return (await _gql(d.gateways["eu"], TOP, b=closed.id))["leaderboard"]["status"] == "CLOSED"

    await Region.wait_until(is_closed, WITHIN_S, "the closed board archived")
    exported = await _gql(d.gateways["us"], EXPORT, u=zed)
    assert zed in str(exported["playerExport"]) and closed.id in str(exported["playerExport"])

    before = {hit.split(":")[0] for hit in await _hits(d, cassandra_session, zed)}  # the scan finds them
    assert {f"{r} {s}" for r in ("eu", "us") for s in ("redis", "rocksdb", "kafka")} | {
        "cassandra award_history", "cassandra profiles", "cassandra board_result_chunks",
        "cassandra board_moderation"} <= before  # fmt: skip

    asked = (await _gql(d.gateways["us"], ERASE, u=zed))["erasePlayer"]
    assert (asked["status"], asked["region"]) == ("PENDING", "us")

    async def done() -> bool:
        erasure = (await _gql(d.gateways["us"], ERASURE, u=zed))["erasure"]
        return bool(erasure["status"] == "DONE")

    await Region.wait_until(done, WITHIN_S, "the erasure DONE")
    erasure = (await _gql(d.gateways["eu"], ERASURE, u=zed))["erasure"]
    assert [(s["store"], s["status"]) for s in erasure["steps"]] == [
        ("awards", "DONE"), ("projection:eu", "DONE"), ("projection:us", "DONE"), ("award_history", "DONE"),
        ("profiles", "DONE"), ("archives", "DONE"), ("moderation", "DONE")]  # fmt: skip
    for board in (plain, sharded, closed, trending):
        assert all(s == expected for s in (await _standings(d, board, TOP)).values())
    assert all(s == expected for s in (await _standings(d, daily, PERIOD_TOP)).values())

    async def refused_everywhere() -> bool:
        answers = [await _send(r, plain, zed, f"late-{r.settings.region}", 5) for r in (eu, us)]
        return all(a.status_code == 410 and a.json()["error"]["code"] == "player_erased" for a in answers)

    await Region.wait_until(refused_everywhere, WITHIN_S, "the intakes refuse the erased player")
    assert await _hits(d, cassandra_session, zed) == []

    # Neither a rebuild of eu's projection nor a processor restored from nothing brings the player back.
    rebuilt = await asyncio.create_subprocess_exec(sys.executable, "-m", "regions.cli", "rebuild", env=eu.env,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)  # fmt: skip
    out, _ = await asyncio.wait_for(rebuilt.communicate(), 300)
    assert rebuilt.returncode == 0, out.decode(errors="replace")
    await us.stop("processor")
    shutil.rmtree(us.settings.processor.store_dir)
    await us.start("processor")
    response = await _send(us, plain, "ann", "after-restore", 1)
    assert response.status_code == 202, response.text
    expected["ann"] = 13
    await Region.wait_until(lambda: everyone_in(plain, hidden=True), WITHIN_S, "ann's award after the restore")
    assert await _hits(d, cassandra_session, zed) == []

    # With retention and compaction shortened (the settings an operator shortens), every record of
    # every topic of both regions, read from the beginning, no longer names the player.
    assert all([await _topic_hits(r.settings, zed) for r in d.regions.values()])  # their raw records, until then
    for region in d.regions.values():
        await _shorten(region.settings)
    for board in (plain, sharded, daily):  # appends to every partition, so every segment rolls
        await _fill_partitions(eu, board)

    async def no_record_names_them() -> bool:
        return not any([await _topic_hits(r.settings, zed) for r in d.regions.values()])

    await Region.wait_until(no_record_names_them, WITHIN_S, "retention and compaction dropped the player's records")


async def _hits(d: Deployment, session: Session, user: str) -> list[str]:
    """Every place of every store (the raw topics apart) that names ``user``."""
    hits = []
    for region in d.regions.values():
        hits += [f"{region.settings.region} redis: {h}" for h in await _redis_hits(region, user)]
        hits += [f"{region.settings.region} rocksdb: {h}" for h in _rocksdb_hits(region, user)]
        hits += [f"{region.settings.region} kafka: {h}" for h in await _compacted_hits(region, user)]
    keyspace = session.keyspace
    for table in session.cluster.metadata.keyspaces[keyspace].tables:
        for row in session.execute(f"SELECT * FROM {table}"):
            if user in repr(tuple(row)):
                hits.append(f"cassandra {table}: {row}")
    return hits


async def _redis_hits(region: Region, user: str) -> list[str]:
    redis, hits = region.projection.redis, []
    async for key in redis.scan_iter(match=f"{region.settings.redis.key_prefix}:*", count=1000):
        kind = await redis.type(key)
        if kind == "zset":
            values = await redis.zrange(key, 0, -1)
        elif kind == "hash":
            values = [*(await redis.hgetall(key)).items()]
        elif kind == "string":
            values = [await redis.get(key)]
        else:
            values = [kind]
        if user in key or user in repr(values):
            hits.append(key)
    return hits


def _rocksdb_hits(region: Region, user: str) -> list[str]:
    hits, base = [], region.settings.processor.store_dir
    for path in sorted(c.parent for c in Path(base).rglob("CURRENT")):
        db = Rdict(str(path), access_type=AccessType.read_only())
        try:
            for key, value in db.items():  # type: ignore[attr-defined]
                if user.encode() in bytes(key) + bytes(value or b""):
                    hits.append(f"{path.name}: {key!r}")
        finally:
            db.close()
    return hits


COMPACTED = {"segment.ms": "200", "min.compaction.lag.ms": "0", "min.cleanable.dirty.ratio": "0.001",
             "delete.retention.ms": "0"}
RAW = {"segment.ms": "200", "retention.ms": "200"}


async def _shorten(settings: Settings) -> None:
    """Shortened retention (raw topics) and compaction (compacted topics) on every platform topic."""
    kafka = settings.kafka
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    await admin.start()
    try:
        resources = []
        for spec in platform_topics(kafka, settings.remote_regions()):
            config = _topic_config(kafka, spec)
            resources.append(ConfigResource(ConfigResourceType.TOPIC, spec.name,
                                            config | (COMPACTED if spec.compacted else RAW)))  # fmt: skip
        await admin.alter_configs(resources)
    finally:
        await admin.close()


async def _fill_partitions(region: Region, board: Board) -> None:
    """An award of a new player in every partition (awards, applied, totals), after segment.ms."""
    await asyncio.sleep(0.5)  # segment.ms: the next append rolls the segment
    partitions = list(range(region.settings.kafka.partitions))
    users: dict[int, str] = {}
    for i in range(10_000):
        users.setdefault(partition_of_key(totals_key(board.id, f"fill-{i}"), partitions), f"fill-{i}")
        if len(users) == len(partitions):
            break
    for user in users.values():
        response = await _send(region, board, user, "fill", 1)
        assert response.status_code == 202, response.text


async def _topic_hits(settings: Settings, user: str) -> list[str]:
    """Records of any platform topic, read from the beginning, naming ``user``."""
    kafka = settings.kafka
    hits = []
    for spec in platform_topics(kafka, settings.remote_regions()):
        for record in await read_all(kafka, spec.name, kafka.partitions):
            if user.encode() in (record.key or b"") + (record.value or b""):
                hits.append(f"{spec.name}:{record.partition}:{record.offset}")
    return hits


async def _compacted_hits(region: Region, user: str) -> list[str]:
    """Records naming the player that compaction keeps: the last record of each key of the compacted
    topics (totals and dedupe), unless it is a tombstone."""
    kafka = region.settings.kafka
    consumer = make_consumer(kafka, group_id=None)
    await consumer.start()
    hits, last = [], {}
    try:
        for topic in (kafka.topic("totals"), kafka.topic("dedupe")):
            tps = [TopicPartition(topic, p) for p in range(kafka.partitions)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            while [tp for tp in tps if await consumer.position(tp) < ends[tp]]:
                for records in (await consumer.getmany(timeout_ms=1000)).values():
                    for record in records:
                        last[(topic, record.key)] = record.value
        hits = [f"{t}: {k!r}" for (t, k), v in last.items()
                if v is not None and user.encode() in (k or b"") + v]  # fmt: skip
    finally:
        await consumer.stop()
    return hits
