"""players(userIds) through the gateway: a friends list ranked on the whole board (sharded or not,
both scopes, a period board), each id once, players without a score last, ids validated and capped."""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path

import pytest

from regions.core.boards import Board
from regions.core.periods import Period, WindowSpec, period_of
from regions.core.windows import encode_window
from tests.integration.gateway.conftest import Boards, Gateway

TOTALS = [(f"p{i:02d}", 100 - 10 * (i // 2)) for i in range(12)]  # pairs tie: 100, 100, 90, 90, ...
PLAYERS = """query($id: ID!, $users: [ID!]!, $scope: Scope) { leaderboard(id: $id) {
  players(userIds: $users, scope: $scope) {
    entries { userId rankAmong player { rank userId score sharedRank topPercent } }
    asOf { region stale }
  }
  period { players(userIds: $users, scope: $scope) { entries { userId rankAmong player { rank sharedRank } } } }
} }"""
ALL_TIME = PLAYERS.replace(
    "  period { players(userIds: $users, scope: $scope) { entries { userId rankAmong player { rank sharedRank } } } }\n",
    "",
)
ASKED = ["p09", "nobody", "p03", "p02", "p09", "ghost", "p11"]  # p09 twice
EXPECTED = [  # (userId, rankAmong, rank, sharedRank)
    ("p02", 1, 3, 3), ("p03", 2, 4, 3), ("p09", 3, 10, 9), ("p11", 4, 12, 11),
    ("nobody", None, None, None), ("ghost", None, None, None),
]  # fmt: skip


def _read(entries: list[dict[str, object]]) -> list[tuple[object, ...]]:
    out = []
    for e in entries:
        p = e["player"]
        assert isinstance(p, dict) or p is None
        out.append((e["userId"], e["rankAmong"], p and p["rank"], p and p["sharedRank"]))
    return out


@pytest.mark.parametrize("shards", [1, 3])
async def test_a_friends_list_is_ranked_on_the_whole_board_in_both_scopes(
    gateway: Gateway, boards: Boards, shards: int
) -> None:
    board = await boards.create(shards=shards)
    await boards.set_totals(board, TOTALS)

    for scope in ("HOME", "REGIONAL"):
        body = await gateway.query(ALL_TIME, {"id": board.id, "users": ASKED, "scope": scope})
        assert "errors" not in body, body
        listed = body["data"]["leaderboard"]["players"]
        assert _read(listed["entries"]) == EXPECTED
        assert listed["entries"][0]["player"] == {
            "rank": 3, "userId": "p02", "score": 90, "sharedRank": 3, "topPercent": 25.0,
        }  # fmt: skip
        assert listed["asOf"]["region"] == "local"


@pytest.mark.parametrize("shards", [1, 2])
async def test_a_period_board_lists_its_current_periods_ranks(
    gateway: Gateway, boards: Boards, shards: int
) -> None:
    spec = WindowSpec(Period.DAILY, time_zone="UTC")
    board = Board(f"gw-{uuid.uuid4().hex[:12]}", "daily", boards.settings.region,
                  window=encode_window(spec), shards=shards)  # fmt: skip
    assert await boards.catalog.create(board)
    await boards.set_totals(board.for_period(period_of(spec, int(time.time() * 1000)).key), TOTALS)

    body = await gateway.query(PLAYERS, {"id": board.id, "users": ASKED, "scope": "REGIONAL"})

    assert "errors" not in body, body
    lb = body["data"]["leaderboard"]
    assert _read(lb["players"]["entries"]) == _read(lb["period"]["players"]["entries"]) == EXPECTED


async def test_a_list_over_the_cap_or_with_a_bad_id_is_refused_naming_it(
    gateway: Gateway, boards: Boards
) -> None:
    board = await boards.create()
    too_many = [f"u{i}" for i in range(gateway.settings.gateway.max_listed_players + 1)]

    over = await gateway.query(ALL_TIME, {"id": board.id, "users": too_many, "scope": "HOME"})
    bad = await gateway.query(ALL_TIME, {"id": board.id, "users": ["ann", ""], "scope": "HOME"})
    empty = await gateway.query(ALL_TIME, {"id": board.id, "users": [], "scope": "HOME"})

    assert over["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert "userIds must list at most 100 players, got 101" in over["errors"][0]["message"]
    assert bad["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert bad["errors"][0]["message"].startswith("userIds[1]: ")
    assert empty["data"]["leaderboard"]["players"]["entries"] == []


async def test_the_live_pages_friends_box_reads_its_list(gateway: Gateway, boards: Boards) -> None:
    script = (Path(__file__).parents[3] / "gateway" / "static" / "live.js").read_text()
    read = re.search(r"const READ = `(.*?)`;", script, re.S)
    assert read is not None
    board = await boards.create(shards=2)
    await boards.set_totals(board, TOTALS)
    variables = {"board": board.id, "user": "p03", "withUser": True, "friends": ASKED, "withFriends": True}

    body = await gateway.query(read.group(1), variables)

    assert "errors" not in body, body
    entries = body["data"]["leaderboard"]["players"]["entries"]
    assert [(e["userId"], e["rankAmong"], e["player"] and e["player"]["sharedRank"]) for e in entries] == [
        (u, among, shared) for u, among, _, shared in EXPECTED
    ]
