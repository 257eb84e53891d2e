"""The intake against real Kafka and Cassandra: every bad request gets a clear 4xx and leaves nothing."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator

import httpx
import msgspec
import pytest
from aiokafka import TopicPartition
from cassandra.cluster import Session

from regions.core.boards import Aggregation, Board, BoardStatus
from regions.intake.app import create_app
from regions.intake.client import signed_request
from regions.intake.openapi import document
from regions.runtime.health import Health
from regions.runtime.settings import Settings
from regions.stores.cassandra.catalog import CassandraCatalog
from regions.stores.kafka.clients import AwardPublisher, RenewableProducer, make_consumer, make_producer


async def _client(settings: Settings, session: Session) -> AsyncIterator[httpx.AsyncClient]:
    producer = RenewableProducer(lambda: make_producer(settings.kafka))
    await producer.start()
    publisher = AwardPublisher(producer, settings.kafka.topic("awards"), settings.kafka.delivery_timeout_s)
    app = create_app(settings, CassandraCatalog(session).get, publisher.publish, Health("intake"))
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://intake"
        ) as client:
            yield client
    finally:
        await producer.stop()


@pytest.fixture
async def intake(topics: Settings, cassandra_session: Session) -> AsyncIterator[httpx.AsyncClient]:
    # The bucket refills too slowly to matter within a test, however slow the machine: the burst decides.
    strict = topics.model_copy(
        update={
            "intake": topics.intake.model_copy(
                update={"max_batch": 3, "max_body_bytes": 4096, "rate_per_key": 0.001, "burst_per_key": 6}
            )
        }
    )
    async for client in _client(strict, cassandra_session):
        yield client


@pytest.fixture
async def boards(cassandra_session: Session) -> dict[str, Board]:
    tag = uuid.uuid4().hex[:8]
    made = {
        "open": Board(f"open-{tag}", "Open", "local"),
        "closed": Board(f"closed-{tag}", "Closed", "local", status=BoardStatus.CLOSED),
        "best": Board(f"best-{tag}", "Best", "local", aggregation=Aggregation.MAX),
    }
    for board in made.values():
        await CassandraCatalog(cassandra_session).create(board)
    return made


def _award(board: str, **extra: object) -> dict[str, object]:
    return {"leaderboardId": board, "matchId": "m1", "userId": "u1", "awardType": "kill", "delta": 3} | extra


async def _post(
    client: httpx.AsyncClient,
    payload: object,
    *,
    secret: str = "dev-secret",
    key: str = "dev",
    now: int | None = None,
    raw: bytes | None = None,
) -> httpx.Response:
    body, headers = signed_request(key, secret, payload, now)
    if raw is not None:
        body, headers = (
            raw,
            signed_request(key, secret, None, now)[1]
            | {"x-award-signature": _sign_raw(secret, headers, raw)},
        )
    return await client.post("/internal/awards", content=body, headers=headers)


def _sign_raw(secret: str, headers: dict[str, str], raw: bytes) -> str:
    from regions.core.signing import sign

    return sign(secret, int(headers["x-award-timestamp"]), raw)


def _error(response: httpx.Response) -> dict[str, object]:
    return msgspec.json.decode(response.content)["error"]  # type: ignore[no-any-return]


async def _awards_written(settings: Settings) -> int:
    consumer = make_consumer(settings.kafka, group_id=None)
    await consumer.start()
    try:
        tps = [TopicPartition(settings.kafka.topic("awards"), p) for p in range(settings.kafka.partitions)]
        return sum((await consumer.end_offsets(tps)).values())
    finally:
        await consumer.stop()


async def test_every_bad_request_gets_a_clear_error_and_writes_nothing(
    intake: httpx.AsyncClient, boards: dict[str, Board], topics: Settings
) -> None:
    open_id = boards["open"].id
    unsigned = await intake.post("/internal/awards", json=_award(open_id))
    forged = await _post(intake, _award(open_id), secret="guess")
    unknown_key = await _post(intake, _award(open_id), key="other")
    stale = await _post(intake, _award(open_id), now=1_000_000)
    not_json = await _post(intake, None, raw=b"{not json")
    bad_fields = await _post(
        intake, {"leaderboardId": open_id, "matchId": "", "userId": 5, "awardType": "k", "delta": 1.5}
    )
    unknown_board = await _post(intake, _award("no-such-board"))
    closed = await _post(intake, _award(boards["closed"].id))
    wrong_amount = await _post(intake, {"awards": [_award(open_id), _award(boards["best"].id)]})
    too_many = await _post(intake, {"awards": [_award(open_id)] * 4})
    too_big = await _post(intake, _award(open_id, matchId="x" * 5000))

    body, headers = signed_request("dev", "dev-secret", _award(open_id))
    not_declared_json = await intake.post(
        "/internal/awards", content=body, headers=headers | {"content-type": "text/plain"}
    )
    negative = await _post(intake, _award(open_id, delta=-3))
    responses = [unsigned, forged, unknown_key, stale, not_json, bad_fields, unknown_board, closed,
                 wrong_amount, too_many, too_big, not_declared_json, negative]  # fmt: skip

    codes = [(r.status_code, _error(r)["code"]) for r in responses]
    assert codes == [
        (401, "auth_missing"), (403, "auth_bad_signature"), (403, "auth_unknown_key"), (401, "auth_skewed"),
        (400, "invalid_json"), (400, "invalid_field"), (404, "unknown_board"), (409, "board_closed"),
        (400, "invalid_field"), (413, "batch_too_large"), (413, "body_too_large"),
        (415, "unsupported_media_type"), (400, "invalid_field"),
    ]  # fmt: skip
    named = [[f["field"] for f in _error(r)["fields"]] for r in responses]  # type: ignore[attr-defined]
    assert named == [
        ["X-Award-Key-Id", "X-Award-Timestamp", "X-Award-Signature"], ["X-Award-Signature"],
        ["X-Award-Key-Id"], ["X-Award-Timestamp"], ["body"], ["matchId", "userId", "delta"],
        ["leaderboardId"], ["leaderboardId"], ["awards[1].delta"], ["awards"], ["body"], ["Content-Type"],
        ["delta"],
    ]  # fmt: skip
    assert await _awards_written(topics) == 0


async def test_a_chunked_body_is_read_no_further_than_the_cap(
    intake: httpx.AsyncClient, boards: dict[str, Board], topics: Settings
) -> None:
    sent = 0

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: sent chunked
        nonlocal sent
        for _ in range(1000):
            sent += 1
            yield b" " * 1024

    headers = signed_request("dev", "dev-secret", _award(boards["open"].id))[1]
    response = await intake.post("/internal/awards", content=chunks(), headers=headers)

    assert (response.status_code, _error(response)["code"]) == (413, "body_too_large")
    assert sent <= 6  # the cap is 4096 bytes: reading stopped there, long before the signature check
    assert await _awards_written(topics) == 0


async def test_a_board_that_allows_negative_deltas_accepts_them(
    intake: httpx.AsyncClient, cassandra_session: Session
) -> None:
    board = Board(f"neg-{uuid.uuid4().hex[:8]}", "Negative", "local", allow_negative=True)
    await CassandraCatalog(cassandra_session).create(board)

    response = await _post(intake, _award(board.id, delta=-3))

    assert response.status_code == 202
    assert await CassandraCatalog(cassandra_session).get(board.id) == board


async def test_over_the_rate_is_429_with_retry_after(
    intake: httpx.AsyncClient, boards: dict[str, Board], topics: Settings
) -> None:
    batch = {"awards": [_award(boards["open"].id, matchId=f"m{i}") for i in range(3)]}
    first, second, third = [await _post(intake, batch) for _ in range(3)]

    assert (first.status_code, second.status_code, third.status_code) == (202, 202, 429)
    assert _error(third)["code"] == "rate_limited" and int(third.headers["retry-after"]) >= 1
    assert await _awards_written(topics) == 6


async def test_client_errors_are_logged_at_info_once_per_code_and_interval(
    intake: httpx.AsyncClient, boards: dict[str, Board], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, "regions.intake.app"):
        for _ in range(5):
            await _post(intake, _award("no-such-board"))

    refused = [r for r in caplog.records if r.name == "regions.intake.app"]
    assert [(r.levelno, r.exc_info) for r in refused] == [(logging.INFO, None)]
    assert refused[0].getMessage() == (
        "refused 404 unknown_board: leaderboard 'no-such-board' does not exist "
        "(leaderboardId must name an existing board)"
    )


async def _nothing_published(records: list[tuple[bytes, bytes]]) -> list[tuple[int, int]]:
    raise AssertionError(f"{len(records)} records published for unknown boards")


async def test_unknown_board_ids_are_remembered_in_bounded_number_oldest_asked_forgotten_first(
    topics: Settings, cassandra_session: Session
) -> None:
    bounded = topics.intake.model_copy(update={"catalog_ttl_s": 3600, "max_unknown_boards": 2})
    catalog, asked = CassandraCatalog(cassandra_session), []

    async def lookup(board_id: str) -> Board | None:
        asked.append(board_id)
        return await catalog.get(board_id)

    app = create_app(
        topics.model_copy(update={"intake": bounded}), lookup, _nothing_published, Health("intake")
    )
    unknown = [f"nope-{uuid.uuid4().hex[:8]}-{i}" for i in range(3)]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://intake") as client:
        answers = [await _post(client, _award(board)) for board in [*unknown, unknown[2], unknown[0]]]

    assert [a.status_code for a in answers] == [404] * 5
    assert asked == [*unknown, unknown[0]]  # the two asked last were remembered, the first forgotten


async def test_the_intake_serves_its_openapi_document_for_its_own_limits(
    intake: httpx.AsyncClient, settings: Settings
) -> None:
    response = await intake.get("/openapi.json")

    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    served = response.json()
    limits = settings.intake.model_copy(update={"max_batch": 3, "max_body_bytes": 4096})  # the fixture's
    assert served == document(limits) != document(settings.intake)
    assert served["openapi"] == "3.1.0"
