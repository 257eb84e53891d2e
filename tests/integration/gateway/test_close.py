"""closeLeaderboard (admin, home region, idempotent) and Leaderboard.result paged from archived chunks."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from cassandra.cluster import Session
from redis.asyncio import Redis

from regions.core.boards import Board, BoardStatus
from regions.core.ordering import encode, reached_position
from regions.lifecycle.archive import archive_projection
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.results import CassandraResults
from regions.stores.redis.projection import ProjectedTotal
from tests.integration.gateway.conftest import Boards, Gateway

CLOSE = """mutation($id: ID!, $reason: String) { closeLeaderboard(id: $id, reason: $reason) { id status } }"""
RESULT = """query($id: ID!, $version: Int, $first: Int, $after: Int) { leaderboard(id: $id) {
  result(version: $version) { leaderboardId version reason playerCount
    entries(first: $first, after: $after) { rank userId score version } } } }"""
ADMIN = {"Authorization": "Bearer dev-admin-token"}


def _code(body: dict[str, object]) -> str:
    return body["errors"][0]["extensions"]["code"]  # type: ignore[index, no-any-return]


async def test_close_needs_the_admin_an_existing_board_and_the_home_region(
    gateway: Gateway, boards: Boards, cassandra_session: Session
) -> None:
    board = await boards.create()
    elsewhere = Board(f"gw-{uuid.uuid4().hex[:12]}", "Away", "elsewhere")
    assert await boards.catalog.create(elsewhere)

    refused = await gateway.query(CLOSE, {"id": board.id}, headers={"Authorization": "Bearer nope"})
    unknown = await gateway.query(CLOSE, {"id": "no-such-board"}, headers=ADMIN)
    away = await gateway.query(CLOSE, {"id": elsewhere.id}, headers=ADMIN)

    assert (_code(refused), _code(unknown), _code(away)) == ("UNAUTHORIZED", "NOT_FOUND", "BAD_USER_INPUT")
    assert "home region 'elsewhere'" in away["errors"][0]["message"]  # type: ignore[index]
    lifecycle = CassandraLifecycle(cassandra_session)
    for untouched in (board, elsewhere):
        record = await lifecycle.record(untouched.id)
        assert record is not None and record.board.status is BoardStatus.OPEN


async def test_close_is_idempotent_and_keeps_the_first_reason(
    gateway: Gateway, boards: Boards, cassandra_session: Session
) -> None:
    board = await boards.create()

    first = await gateway.query(CLOSE, {"id": board.id, "reason": "season over"}, headers=ADMIN)
    again = await gateway.query(CLOSE, {"id": board.id, "reason": "again"}, headers=ADMIN)

    assert first["data"] == again["data"] == {"closeLeaderboard": {"id": board.id, "status": "CLOSING"}}
    record = await CassandraLifecycle(cassandra_session).record(board.id)
    assert record is not None and record.close_reason == "season over" and record.closing_at_ms is not None


async def test_the_archived_result_reads_in_pages_from_its_chunks(
    gateway: Gateway, boards: Boards, cassandra_session: Session, redis_client: Redis
) -> None:
    board = await boards.create()
    totals = [(f"p{i:02d}", 100 - 3 * i) for i in range(11)]
    await boards.set_totals(board, totals)
    results = CassandraResults(cassandra_session)
    lifecycle = CassandraLifecycle(cassandra_session)
    assert await lifecycle.begin_close(board.id, "end", datetime.now(UTC))
    archived = await archive_projection(redis_client, gateway.settings.redis.key_prefix, results, board,
                                        version=1, reason="end", chunk_size=4, created_at=datetime.now(UTC))  # fmt: skip
    assert (archived.header.player_count, archived.header.chunk_count) == (11, 3)
    again = await archive_projection(redis_client, gateway.settings.redis.key_prefix, results, board,
                                     version=1, reason="end", chunk_size=4, created_at=datetime.now(UTC))  # fmt: skip
    assert again.chunks_written == 0  # a complete version is left as it is

    page = await gateway.query(RESULT, {"id": board.id, "first": 5, "after": 2})
    newest = await gateway.query(RESULT, {"id": board.id, "first": 100})
    missing = await gateway.query(RESULT, {"id": board.id, "version": 2})

    result = page["data"]["leaderboard"]["result"]
    assert {k: result[k] for k in ("leaderboardId", "version", "reason", "playerCount")} == {
        "leaderboardId": board.id, "version": 1, "reason": "end", "playerCount": 11,
    }  # fmt: skip
    expected = [
        {"rank": r, "userId": u, "score": s, "version": 1} for r, (u, s) in enumerate(totals, start=1)
    ]
    assert result["entries"] == expected[2:7]
    assert newest["data"]["leaderboard"]["result"]["entries"] == expected
    assert missing["data"]["leaderboard"]["result"] is None


async def test_a_closed_boards_result_shows_each_entrys_metadata(
    gateway: Gateway, boards: Boards, cassandra_session: Session, redis_client: Redis
) -> None:
    board = await boards.create()
    metadata = {"ann": '{"replay":"r1"}', "cat": '{"deck":["a","b"]}'}
    totals = [("ann", 30), ("bob", 20), ("cat", 10)]
    projected = []
    for i, (user, total) in enumerate(totals):
        score, member = encode(board.sort_order, board.tie_policy, user, total, reached_position(1, 0, i))
        projected.append(ProjectedTotal(user, 1, total, score, member, metadata.get(user, "")))
    await boards.projection.apply(board.id, projected, board.shards)
    assert await CassandraLifecycle(cassandra_session).begin_close(board.id, "end", datetime.now(UTC))
    await archive_projection(redis_client, gateway.settings.redis.key_prefix, CassandraResults(cassandra_session),
                             board, version=1, reason="end", chunk_size=2, created_at=datetime.now(UTC))  # fmt: skip

    query = "query($id: ID!) { leaderboard(id: $id) { result { entries { userId metadata } } } }"
    body = await gateway.query(query, {"id": board.id})
    assert body["data"]["leaderboard"]["result"]["entries"] == [  # type: ignore[index]
        {"userId": "ann", "metadata": {"replay": "r1"}},
        {"userId": "bob", "metadata": None},
        {"userId": "cat", "metadata": {"deck": ["a", "b"]}},
    ]
