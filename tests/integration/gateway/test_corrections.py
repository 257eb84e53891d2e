"""publishCorrection's refusals and idempotency, on the real catalog and projection (no worker runs, so
a recorded correction stays PENDING here; tests/integration/regions/test_corrections.py publishes
them end to end)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from cassandra.cluster import Session

from regions.core.boards import Board
from regions.stores.cassandra.corrections import CassandraCorrections
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from tests.integration.gateway.conftest import Boards, Gateway

CORRECT = """mutation($input: PublishCorrectionInput!) { publishCorrection(input: $input) {
  leaderboardId correctionId resultVersion status reason adjustments { userId score } } }"""
ADMIN = {"Authorization": "Bearer dev-admin-token"}


def _input(
    board: str, *adjustments: tuple[str, int], cid: str = "c1", reason: str = "cheat"
) -> dict[str, Any]:
    return {"input": {"leaderboardId": board, "correctionId": cid, "reason": reason,
                      "adjustments": [{"userId": u, "score": s} for u, s in adjustments]}}  # fmt: skip


def _refusal(body: dict[str, Any]) -> tuple[str, str]:
    assert body.get("data") is None, body
    error = body["errors"][0]
    return error["extensions"]["code"], error["message"]


async def _closed(boards: Boards, session: Session, board: Board | None = None) -> Board:
    """A CLOSED board of this region whose frozen projection holds ann, bob and cat."""
    board = board or await boards.create()
    await boards.set_totals(board, [("ann", 50), ("bob", 40), ("cat", 10)])
    await boards.set_positions({0: 3}, accepted_ms=1_700_000_000_000)
    lifecycle = CassandraLifecycle(session)
    assert await lifecycle.begin_close(board.id, "season over", datetime.now(UTC))
    assert await lifecycle.finish_close(board.id, {f"{board.home_region}:0": 3}, 1, datetime.now(UTC))
    return board


async def test_a_correction_is_recorded_as_the_next_version_once_per_id(
    gateway: Gateway, boards: Boards, cassandra_session: Session
) -> None:
    board = await _closed(boards, cassandra_session)

    first = await gateway.query(CORRECT, _input(board.id, ("bob", 60), ("cat", 5)), headers=ADMIN)
    again = await gateway.query(
        CORRECT, _input(board.id, ("cat", 5), ("bob", 60)), headers=ADMIN
    )  # any order
    second = await gateway.query(CORRECT, _input(board.id, ("ann", 1), cid="c2"), headers=ADMIN)
    conflict = await gateway.query(CORRECT, _input(board.id, ("bob", 61), ("cat", 5)), headers=ADMIN)

    assert first["data"]["publishCorrection"] == {
        "leaderboardId": board.id, "correctionId": "c1", "resultVersion": 2, "status": "PENDING",
        "reason": "cheat", "adjustments": [{"userId": "bob", "score": 60}, {"userId": "cat", "score": 5}],
    }  # fmt: skip
    assert again["data"] == first["data"]
    assert second["data"]["publishCorrection"]["resultVersion"] == 3
    code, message = _refusal(conflict)
    assert code == "ALREADY_EXISTS" and message.startswith("input.correctionId: 'c1' is correction version 2")
    corrections = await CassandraCorrections(cassandra_session).of_board(board.id)
    assert [(c.correction_id, c.result_version) for c in corrections] == [("c1", 2), ("c2", 3)]


async def test_every_refusal_names_the_field_and_records_nothing(
    gateway: Gateway, boards: Boards, cassandra_session: Session
) -> None:
    closed = await _closed(boards, cassandra_session)
    open_board = await boards.create()
    closing = await boards.create()
    assert await CassandraLifecycle(cassandra_session).begin_close(closing.id, "end", datetime.now(UTC))
    away = Board(f"gw-{uuid.uuid4().hex[:12]}", "Away", "elsewhere")
    assert await boards.catalog.create(away)
    cases = {
        "unknown board": (_input("no-such-board", ("ann", 1)), ADMIN),
        "open": (_input(open_board.id, ("ann", 1)), ADMIN),
        "closing": (_input(closing.id, ("ann", 1)), ADMIN),
        "not in the result": (_input(closed.id, ("ann", 1), ("zed", 2)), ADMIN),
        "empty": (_input(closed.id), ADMIN),
        "twice": (_input(closed.id, ("ann", 1), ("ann", 2)), ADMIN),
        "out of range": (_input(closed.id, ("ann", 2**53)), ADMIN),
        "not admin": (_input(closed.id, ("ann", 1)), {"Authorization": "Bearer nope"}),
        "not home": (_input(away.id, ("ann", 1)), ADMIN),
    }
    answers = {name: _refusal(await gateway.query(CORRECT, v, headers=h)) for name, (v, h) in cases.items()}

    assert answers == {
        "unknown board": ("NOT_FOUND", "input.leaderboardId: leaderboard 'no-such-board' does not exist"),
        "open": ("BAD_USER_INPUT", f"input.leaderboardId: leaderboard {open_board.id!r} is OPEN; only a CLOSED "
                 "board takes corrections (close it, and wait until it is CLOSED)"),
        "closing": ("BAD_USER_INPUT", f"input.leaderboardId: leaderboard {closing.id!r} is CLOSING; only a "
                    "CLOSED board takes corrections (close it, and wait until it is CLOSED)"),
        "not in the result": ("BAD_USER_INPUT", f"input.adjustments[1].userId: 'zed' is not in the result of "
                              f"{closed.id!r} (a correction changes the score of a player in it)"),
        "empty": ("BAD_USER_INPUT", "input.adjustments: must hold 1..1000 adjustments, got 0"),
        "twice": ("BAD_USER_INPUT", "input.adjustments[1].userId: 'ann' is adjusted twice (also adjustments[0])"),
        "out of range": ("BAD_USER_INPUT", "input.adjustments[0].score: must be an exact integer with |score| < 2^53"),
        "not admin": ("UNAUTHORIZED", "this operation needs Authorization: Bearer <admin token>"),
        "not home": ("BAD_USER_INPUT", f"input.leaderboardId: leaderboard {away.id!r} is corrected in its home "
                     "region 'elsewhere', not 'local': send the correction to that region"),
    }  # fmt: skip
    corrections = CassandraCorrections(cassandra_session)
    for board in (closed, open_board, closing, away):
        assert await corrections.of_board(board.id) == []


async def test_a_close_is_seen_at_once_by_the_gateway_that_handled_it(
    gateway: Gateway, boards: Boards
) -> None:
    board = await boards.create()
    read = "query($id: ID!) { leaderboard(id: $id) { status } }"
    before = await gateway.query(read, {"id": board.id})  # cached as OPEN for the board cache's TTL

    await gateway.query("mutation($id: ID!) { closeLeaderboard(id: $id) { status } }", {"id": board.id},
                        headers=ADMIN)  # fmt: skip
    after = await gateway.query(read, {"id": board.id})

    assert before["data"]["leaderboard"]["status"] == "OPEN"
    assert after["data"]["leaderboard"]["status"] == "CLOSING"
