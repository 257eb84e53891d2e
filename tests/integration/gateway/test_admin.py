"""createLeaderboard needs the admin bearer token and writes the real catalog."""

from __future__ import annotations

import uuid

import pytest
from cassandra.cluster import Session

from regions.cassandra_catalog import CassandraCatalog
from regions.core.boards import Aggregation, SortOrder, TiePolicy
from tests.integration.gateway.conftest import Gateway

CREATE = """mutation($input: CreateLeaderboardInput!) {
  createLeaderboard(input: $input) {
    id name homeRegion status sortOrder aggregation tiePolicy window { period days }
  }
}"""
ADMIN = {"Authorization": "Bearer dev-admin-token"}


def new_id() -> str:
    return f"adm-{uuid.uuid4().hex[:12]}"


async def test_without_or_with_a_wrong_token_is_an_authorization_error(
    gateway: Gateway, cassandra_session: Session
) -> None:
    board_id = new_id()
    variables = {"input": {"id": board_id, "name": "Nope"}}

    missing = await gateway.query(CREATE, variables)
    wrong = await gateway.query(CREATE, variables, headers={"Authorization": "Bearer not-the-token"})

    for body in (missing, wrong):
        assert body["data"] is None
        assert body["errors"][0]["extensions"]["code"] == "UNAUTHORIZED"
    assert await CassandraCatalog(cassandra_session).get(board_id) is None


async def test_admin_creates_a_board_with_its_rules(gateway: Gateway, cassandra_session: Session) -> None:
    board_id = new_id()
    variables = {"input": {"id": board_id, "name": "Sprint", "sortOrder": "ASC", "aggregation": "MIN",
                           "tiePolicy": "FIRST_REACHED"}}  # fmt: skip

    body = await gateway.query(CREATE, variables, headers=ADMIN)

    assert body["data"]["createLeaderboard"] == {
        "id": board_id, "name": "Sprint", "homeRegion": "local", "status": "OPEN", "sortOrder": "ASC",
        "aggregation": "MIN", "tiePolicy": "FIRST_REACHED", "window": None,
    }  # fmt: skip
    stored = await CassandraCatalog(cassandra_session).get(board_id)
    assert stored is not None
    assert (stored.sort_order, stored.aggregation, stored.tie_policy, stored.window) == (
        SortOrder.ASC, Aggregation.MIN, TiePolicy.FIRST_REACHED, None,
    )  # fmt: skip
    read = await gateway.query(
        "query($id: ID!) { leaderboard(id: $id) { name window { period } } }", {"id": board_id}
    )
    assert read["data"]["leaderboard"] == {"name": "Sprint", "window": None}


@pytest.mark.parametrize("window", [{"period": "ROLLING", "days": 7}, {"period": "DAILY"}])
async def test_a_time_window_is_refused_until_windows_are_supported(
    gateway: Gateway, cassandra_session: Session, window: dict[str, object]
) -> None:
    board_id = new_id()

    body = await gateway.query(
        CREATE, {"input": {"id": board_id, "name": "W", "window": window}}, headers=ADMIN
    )

    assert body["data"] is None
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert (
        body["errors"][0]["message"]
        == "window: time windows are not supported yet; omit it for an all-time board"
    )
    assert await CassandraCatalog(cassandra_session).get(board_id) is None


async def test_duplicate_and_invalid_boards_are_user_errors(gateway: Gateway) -> None:
    board_id = new_id()
    first = await gateway.query(CREATE, {"input": {"id": board_id, "name": "One"}}, headers=ADMIN)
    again = await gateway.query(CREATE, {"input": {"id": board_id, "name": "Two"}}, headers=ADMIN)
    bad_id = await gateway.query(CREATE, {"input": {"id": "-bad id-", "name": "x"}}, headers=ADMIN)

    assert "errors" not in first
    assert again["errors"][0]["extensions"]["code"] == "ALREADY_EXISTS"
    assert bad_id["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert bad_id["errors"][0]["message"].startswith("input.id: ")
