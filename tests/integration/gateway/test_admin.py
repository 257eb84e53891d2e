"""createLeaderboard needs the admin bearer token and writes the real catalog."""

from __future__ import annotations

import uuid

import pytest
from cassandra.cluster import Session

from regions.core.boards import Aggregation, Consistency, SortOrder, TiePolicy
from regions.stores.cassandra.catalog import CassandraCatalog
from tests.integration.gateway.conftest import Gateway

CREATE = """mutation($input: CreateLeaderboardInput!) {
  createLeaderboard(input: $input) {
    id name homeRegion status sortOrder aggregation tiePolicy consistency window { period days }
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
                           "tiePolicy": "FIRST_REACHED", "consistency": "HOME_ROUTED"}}  # fmt: skip

    body = await gateway.query(CREATE, variables, headers=ADMIN)

    assert body["data"]["createLeaderboard"] == {
        "id": board_id, "name": "Sprint", "homeRegion": "local", "status": "OPEN", "sortOrder": "ASC",
        "aggregation": "MIN", "tiePolicy": "FIRST_REACHED", "consistency": "HOME_ROUTED", "window": None,
    }  # fmt: skip
    stored = await CassandraCatalog(cassandra_session).get(board_id)
    assert stored is not None
    assert (stored.sort_order, stored.aggregation, stored.tie_policy, stored.window, stored.consistency) == (
        SortOrder.ASC, Aggregation.MIN, TiePolicy.FIRST_REACHED, None, Consistency.HOME_ROUTED,
    )  # fmt: skip
    read = await gateway.query(
        "query($id: ID!) { leaderboard(id: $id) { name consistency window { period } } }", {"id": board_id}
    )
    assert read["data"]["leaderboard"] == {"name": "Sprint", "consistency": "HOME_ROUTED", "window": None}
    plain = await gateway.query(CREATE, {"input": {"id": new_id(), "name": "Plain"}}, headers=ADMIN)
    assert plain["data"]["createLeaderboard"]["consistency"] == "REGIONAL"  # the default


WINDOWED = """mutation($input: CreateLeaderboardInput!) {
  createLeaderboard(input: $input) { id window { period days timeZone firstDayOfWeek } }
}"""


@pytest.mark.parametrize(
    ("window", "read", "stored"),
    [
        ({"period": "ROLLING", "days": 7}, {"period": "ROLLING", "days": 7, "timeZone": "UTC", "firstDayOfWeek": None},
         "rolling:7d"),
        ({"period": "WEEKLY", "timeZone": "America/New_York", "firstDayOfWeek": "SUNDAY"},
         {"period": "WEEKLY", "days": None, "timeZone": "America/New_York", "firstDayOfWeek": "SUNDAY"},
         "weekly;tz=America/New_York;first=SUNDAY"),
        ({"period": "DAILY", "timeZone": "Asia/Kolkata"},
         {"period": "DAILY", "days": None, "timeZone": "Asia/Kolkata", "firstDayOfWeek": None}, "daily;tz=Asia/Kolkata"),
    ],
)  # fmt: skip
async def test_a_time_window_is_stored_with_its_zone_and_first_day(
    gateway: Gateway,
    cassandra_session: Session,
    window: dict[str, object],
    read: dict[str, object],
    stored: str,
) -> None:
    board_id = new_id()

    body = await gateway.query(
        WINDOWED, {"input": {"id": board_id, "name": "W", "window": window}}, headers=ADMIN
    )

    assert body["data"]["createLeaderboard"] == {"id": board_id, "window": read}
    found = await CassandraCatalog(cassandra_session).get(board_id)
    assert found is not None and found.window == stored


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ({"period": "ROLLING"}, "input.window.days: a ROLLING window needs 1..366 days"),
        ({"period": "DAILY", "days": 2}, "input.window.days: only a ROLLING window takes days, not DAILY"),
        ({"period": "DAILY", "timeZone": "Europe/Atlantis"},
         "input.window.timeZone: 'Europe/Atlantis' is not an IANA time zone name such as Europe/Stockholm"),
        ({"period": "MONTHLY", "firstDayOfWeek": "SUNDAY"},
         "input.window.firstDayOfWeek: only a WEEKLY window takes a first day, not MONTHLY"),
    ],
)  # fmt: skip
async def test_a_window_that_breaks_a_rule_is_refused_naming_the_field(
    gateway: Gateway, cassandra_session: Session, window: dict[str, object], message: str
) -> None:
    board_id = new_id()

    body = await gateway.query(
        CREATE, {"input": {"id": board_id, "name": "W", "window": window}}, headers=ADMIN
    )

    assert body["data"] is None
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert body["errors"][0]["message"] == message
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


async def test_a_board_may_be_sharded_within_the_bound(gateway: Gateway, cassandra_session: Session) -> None:
    board_id, create = (
        new_id(),
        "mutation($input: CreateLeaderboardInput!) { createLeaderboard(input: $input) { id shards } }",
    )

    made = await gateway.query(create, {"input": {"id": board_id, "name": "Hot", "shards": 4}}, headers=ADMIN)
    too_many = await gateway.query(
        create, {"input": {"id": new_id(), "name": "Hot", "shards": 65}}, headers=ADMIN
    )
    default = await gateway.query(create, {"input": {"id": new_id(), "name": "Calm"}}, headers=ADMIN)

    assert made["data"]["createLeaderboard"] == {"id": board_id, "shards": 4}
    stored = await CassandraCatalog(cassandra_session).get(board_id)
    assert stored is not None and stored.shards == 4
    assert too_many["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert "shards: must be 1..64, got 65" in too_many["errors"][0]["message"]
    assert default["data"]["createLeaderboard"]["shards"] == 1
