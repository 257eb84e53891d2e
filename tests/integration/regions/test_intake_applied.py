"""``POST /internal/awards?wait=applied``: the answer waits for this region's projection, through the
real intake, processor and projector of one region (and on a Redis Cluster with ``--redis-url``)."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
from aiokafka import ConsumerRecord, TopicPartition
from cassandra.cluster import Session

from ops.stack import free_port
from regions.core.boards import Aggregation, Board
from regions.core.periods import Period, WindowSpec
from regions.core.windows import encode_window
from regions.intake.app import create_app
from regions.intake.client import signed_request
from regions.intake.waits import ProjectionWaits
from regions.runtime.health import Health
from regions.runtime.settings import Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.kafka.clients import AwardPublisher, RenewableProducer, make_producer, replay
from regions.stores.redis.connection import ProjectionRedis
from tests.conftest import RegionFactory
from tests.harness import Region

WAIT = {"wait": "applied", "timeoutMs": "2000"}


def _award(board: Board, user: str, amount: int, **extra: object) -> dict[str, object]:
    return {"leaderboardId": board.id, "matchId": uuid.uuid4().hex, "userId": user, "awardType": "kill",
            board.amount_field: amount, **extra}  # fmt: skip


def _now() -> str:
    return datetime.now(UTC).isoformat()


async def _board(region: Region, **rules: Any) -> Board:
    board = Board(f"w-{uuid.uuid4().hex[:8]}", "Waits", region.settings.region, **rules)
    await region.create_board(board)
    return board


async def _applied(region: Region, award: dict[str, object]) -> dict[str, object] | None:
    response = await region.client.send(award, WAIT)
    assert response.status_code == 202, response.text
    [accepted] = response.json()["accepted"]
    assert {"eventId", "region", "partition", "offset"} <= accepted.keys()
    return accepted["applied"]  # type: ignore[no-any-return]


def _at(score: int, rank: int, shared_rank: int, *, changed: bool = True) -> dict[str, object]:
    return {"score": score, "rank": rank, "sharedRank": shared_rank, "changed": changed}


async def _warm(region: Region, board: Board, **extra: object) -> None:
    """An award sent plainly and seen projected: every process of the region is past its start."""
    assert (await region.client.send(_award(board, "warm-up", 1, **extra))).status_code == 202
    await region.wait_for_total(board.counting(int(time.time() * 1000)).id, "warm-up", 1)


async def test_an_awaited_award_answers_its_score_and_rank_on_every_kind_of_board(region: Region) -> None:
    kinds: list[tuple[dict[str, Any], dict[str, object]]] = [
        ({}, {}),
        ({"window": encode_window(WindowSpec(Period.DAILY))}, {"occurredAt": _now()}),
        ({"window": encode_window(WindowSpec(Period.ROLLING, days=7))}, {"occurredAt": _now()}),
        ({"shards": 4}, {}),
    ]
    for rules, extra in kinds:
        board = await _board(region, **rules)
        await _warm(region, board, **extra)
        # (player, points, the answer): warm-up has 1 point and stays last; equal scores rank by user id
        for user, points, applied in [
            ("carol", 30, _at(30, 1, 1)),
            ("bob", 20, _at(20, 2, 2)),
            ("alice", 25, _at(25, 2, 2)),
            ("bob", 10, _at(30, 1, 1)),
            ("dave", 30, _at(30, 3, 1)),  # tied with bob and carol
            ("warm-up", 1, _at(2, 5, 5)),
        ]:
            assert await _applied(region, _award(board, user, points, **extra)) == applied, (rules, user)


async def test_a_worse_best_of_score_is_applied_unchanged(region: Region) -> None:
    board = await _board(region, aggregation=Aggregation.MAX)
    await _warm(region, board)
    assert await _applied(region, _award(board, "ann", 10)) == _at(10, 1, 1)
    assert await _applied(region, _award(board, "ann", 7)) == _at(10, 1, 1, changed=False)
    assert await _applied(region, _award(board, "ann", 12)) == _at(12, 1, 1)
    assert await region.projection.version_of(board.id, "ann") == 3  # the worse score was applied


async def test_a_batch_waits_for_each_award(region: Region) -> None:
    board = await _board(region)
    await _warm(region, board)
    response = await region.client.send({"awards": [_award(board, "ann", 5), _award(board, "ben", 7)]}, WAIT)
    assert response.status_code == 202
    ann, ben = (a["applied"] for a in response.json()["accepted"])
    assert ben == _at(7, 1, 1)
    # each rank is as of the read that covered its own award: ben's may not be projected yet then
    assert ann in (_at(5, 1, 1), _at(5, 2, 2))


async def test_the_answer_is_null_when_the_timeout_passes_first(region_factory: RegionFactory) -> None:
    region = await region_factory(services=("processor", "intake"))  # no projector: nothing is projected
    board = await _board(region)
    response = await region.client.send(
        {"awards": [_award(board, "ann", 5), _award(board, "ben", 7)]},
        {"wait": "applied", "timeoutMs": "300"},
    )
    assert response.status_code == 202
    accepted = response.json()["accepted"]
    assert [a["applied"] for a in accepted] == [None, None]
    assert all(a["offset"] >= 0 and a["region"] == region.settings.region for a in accepted)


async def test_the_plain_answer_is_unchanged(region: Region) -> None:
    board = await _board(region)
    response = await region.client.send(_award(board, "ann", 5))
    assert response.status_code == 202
    assert [set(a) for a in response.json()["accepted"]] == [{"eventId", "region", "partition", "offset"}]


async def _awards_of(settings: Settings, board: Board) -> int:
    """Records of ``board``'s awards in the awards topic (heartbeats, written there too, are not)."""
    tps = [TopicPartition(settings.kafka.topic("awards"), p) for p in range(settings.kafka.partitions)]
    found = 0

    async def count(records: list[ConsumerRecord]) -> None:
        nonlocal found
        found += sum(1 for r in records if r.key is not None and r.key.startswith(f"{board.id}|".encode()))

    await replay(settings.kafka, tps, count)
    return found


async def test_bad_wait_parameters_are_refused_by_name_and_write_nothing(region: Region) -> None:
    board = await _board(region)
    award = _award(board, "ann", 5)
    cases = [
        ({"wait": "projected"}, "wait", "must be 'applied'"),
        (
            {"wait": "applied", "timeoutMs": "2001"},
            "timeoutMs",
            "must be an integer of milliseconds, 1..2000",
        ),
        (
            {"wait": "applied", "timeoutMs": "soon"},
            "timeoutMs",
            "must be an integer of milliseconds, 1..2000",
        ),
        ({"timeoutMs": "100"}, "timeoutMs", "is taken only with wait=applied"),
    ]
    for params, name, rule in cases:
        response = await region.client.send(award, params)
        assert response.status_code == 400, params
        error = response.json()["error"]
        assert error["code"] == "invalid_parameter"
        assert error["fields"] == [{"field": name, "rule": rule}]
    assert await _awards_of(region.settings, board) == 0


async def test_with_redis_down_the_intake_accepts_awards_and_a_wait_answers_null(
    region_factory: RegionFactory, topics: Settings
) -> None:
    down = topics.model_copy(
        update={"redis": topics.redis.model_copy(update={"url": f"redis://127.0.0.1:{free_port()}/0"})}
    )
    region = await region_factory(down, services=("intake",))
    board = await _board(region)
    plain = await region.client.send(_award(board, "ann", 5))
    assert plain.status_code == 202 and "applied" not in plain.json()["accepted"][0]
    waited = await region.client.send(_award(board, "ann", 6), {"wait": "applied", "timeoutMs": "500"})
    assert waited.status_code == 202 and waited.json()["accepted"][0]["applied"] is None


async def test_the_plain_path_never_connects_to_redis(topics: Settings, cassandra_session: Session) -> None:
    catalog = CassandraCatalog(cassandra_session)
    board = Board(f"w-{uuid.uuid4().hex[:8]}", "Waits", topics.region)
    await catalog.create(board)
    connects: list[int] = []

    def connect() -> ProjectionRedis:
        connects.append(1)
        raise ConnectionError("the plain path must not connect")

    producer = RenewableProducer(lambda: make_producer(topics.kafka))
    await producer.start()
    publisher = AwardPublisher(producer, topics.kafka.topic("awards"), topics.kafka.delivery_timeout_s)
    app = create_app(
        topics, catalog.get, publisher.publish, Health("intake"), ProjectionWaits(topics, connect)
    )
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://intake"
        ) as http:
            for n in range(3):
                body, headers = signed_request("dev", "dev-secret", _award(board, "ann", n + 1))
                assert (await http.post("/internal/awards", content=body, headers=headers)).status_code == 202
    finally:
        await producer.stop()
    assert connects == []
