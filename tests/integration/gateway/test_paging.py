"""Pages over HTTP: ``entries`` walks a board forwards and backwards with cursors, jumps to a rank,
reads a board with periods in its current period, and refuses bad cursors, cursors of another
board or period, broken combinations and sizes over the cap, naming the argument."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cassandra.cluster import Session

from regions.core.periods import Period, WindowSpec, period_of, previous_period
from tests.integration.gateway.conftest import Boards, Gateway, GatewayFactory
from tests.integration.gateway.test_periods import _windowed

PAGE = """query($id: ID!, $first: Int, $after: String, $last: Int, $before: String, $from: Int) {
  leaderboard(id: $id) {
    entries(first: $first, after: $after, last: $last, before: $before, fromRank: $from) {
      entries { rank userId score }
      pageInfo { startCursor endCursor hasNextPage hasPreviousPage }
      totalCount
      asOf { region positions { partition offset } stale }
    }
  }
}"""
LIVE_JS = Path(__file__).resolve().parents[3] / "gateway" / "static" / "live.js"
TOTALS = [("ann", 9), ("bob", 8), ("cat", 8), ("dan", 7), ("eve", 6), ("fay", 5), ("gus", 5)]


async def _page(gateway: Gateway, board_id: str, **arguments: Any) -> dict[str, Any]:
    body = await gateway.query(PAGE, {"id": board_id, **arguments})
    assert "errors" not in body, body
    return dict(body["data"]["leaderboard"]["entries"])


def _ranked(page: dict[str, Any]) -> list[tuple[int, str]]:
    return [(e["rank"], e["userId"]) for e in page["entries"]]


async def test_a_walk_forwards_and_backwards_and_a_jump_on_a_sharded_board(
    gateway: Gateway, boards: Boards
) -> None:
    board = await boards.create(shards=3)
    await boards.set_totals(board, TOTALS)
    await boards.set_positions({0: 12}, accepted_ms=1_700_000_000_000)
    everyone = [(rank, user) for rank, (user, _) in enumerate(TOTALS, start=1)]

    seen, page = [], await _page(gateway, board.id, first=3)
    assert page["totalCount"] == 7 and page["asOf"]["positions"] == [{"partition": 0, "offset": 12}]
    assert page["pageInfo"]["hasPreviousPage"] is False
    while True:
        seen += _ranked(page)
        if not page["pageInfo"]["hasNextPage"]:
            break
        page = await _page(gateway, board.id, first=3, after=page["pageInfo"]["endCursor"])
    assert seen == everyone

    back, page = [], await _page(gateway, board.id, last=2)
    assert page["pageInfo"]["hasNextPage"] is False
    while True:
        back = _ranked(page) + back
        if not page["pageInfo"]["hasPreviousPage"]:
            break
        page = await _page(gateway, board.id, last=2, before=page["pageInfo"]["startCursor"])
    assert back == everyone

    jump = await _page(gateway, board.id, first=2, **{"from": 3})
    assert _ranked(jump) == [(3, "cat"), (4, "dan")]
    assert jump["pageInfo"]["hasPreviousPage"] and jump["pageInfo"]["hasNextPage"]
    past = await _page(gateway, board.id, **{"from": 99})
    assert (past["entries"], past["pageInfo"]["startCursor"], past["pageInfo"]["hasNextPage"]) == (
        [],
        None,
        False,
    )


def _refusal(body: dict[str, Any]) -> tuple[str, str]:
    [error] = body["errors"]
    return error["extensions"]["code"], error["message"]


async def test_bad_cursors_combinations_and_sizes_name_the_argument(
    gateway_factory: GatewayFactory, boards: Boards
) -> None:
    board, other = await boards.create(), await boards.create()
    await boards.set_totals(board, TOTALS)
    await boards.set_totals(other, TOTALS)
    async with gateway_factory(max_top_k=5) as gw:
        default = await _page(gw, board.id)
        foreign = (await _page(gw, other.id, first=1))["pageInfo"]["endCursor"]
        asked = [
            {"after": "not-a-cursor"},
            {"before": foreign},
            {"first": 1, "last": 1},
            {"after": foreign, "before": foreign},
            {"from": 2, "after": foreign},
            {"first": 0},
            {"from": -1},
            {"first": 6},
            {"last": 6},
        ]
        refused = [_refusal(await gw.query(PAGE, {"id": board.id, **a})) for a in asked]

    assert len(default["entries"]) == 5  # the default page, at the cap
    assert refused[0] == (
        "BAD_USER_INPUT",
        "after: not a cursor of this API (pass a startCursor or endCursor)",
    )
    assert refused[1] == (
        "BAD_USER_INPUT",
        f"before: the cursor was read from {other.id!r}, not from {board.id!r}",
    )
    assert refused[2:7] == [
        ("BAD_USER_INPUT", "first: cannot be given with last"),
        ("BAD_USER_INPUT", "after: cannot be given with before"),
        ("BAD_USER_INPUT", "fromRank: cannot be given with after"),
        ("BAD_USER_INPUT", "first: must be 1 or more, got 0"),
        ("BAD_USER_INPUT", "fromRank: must be 1 or more, got -1"),
    ]
    assert refused[7:] == [
        ("LIMIT_EXCEEDED", "first: must be between 1 and 5, got 6"),
        ("LIMIT_EXCEEDED", "last: must be between 1 and 5, got 6"),
    ]


PERIODS = """query($id: ID!, $key: String!, $after: String) { leaderboard(id: $id) {
  entries(first: 1) { entries { rank userId } pageInfo { endCursor } }
  period(key: $key) { entries(first: 1, after: $after) { entries { userId } } }
} }"""


async def test_a_board_with_periods_pages_its_current_period_and_refuses_its_cursor_in_another(
    gateway: Gateway, boards: Boards, cassandra_session: Session
) -> None:
    now = int(time.time() * 1000)
    spec = WindowSpec(Period.DAILY, time_zone="UTC")
    today = period_of(spec, now)
    yesterday = previous_period(spec, today)
    board = await _windowed(
        boards, cassandra_session, spec, int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1000)
    )
    await boards.set_totals(board.for_period(today.key), [("ann", 5), ("bob", 9)])
    await boards.set_totals(board.for_period(yesterday.key), [("cat", 4), ("dan", 3)])

    first = await gateway.query(PERIODS, {"id": board.id, "key": today.key})
    lb = first["data"]["leaderboard"]
    assert lb["entries"]["entries"] == [{"rank": 1, "userId": "bob"}]
    cursor = lb["entries"]["pageInfo"]["endCursor"]
    same = await gateway.query(PERIODS, {"id": board.id, "key": today.key, "after": cursor})
    other = await gateway.query(PERIODS, {"id": board.id, "key": yesterday.key, "after": cursor})

    assert same["data"]["leaderboard"]["period"]["entries"]["entries"] == [{"userId": "ann"}]
    code, message = _refusal(other)
    assert code == "BAD_USER_INPUT" and message.startswith("after: the cursor was read from")
    assert board.for_period(yesterday.key).id in message


async def test_the_live_pages_more_reads_the_next_pages(gateway: Gateway, boards: Boards) -> None:
    [more] = re.findall(r"const MORE = `(.*?)`;", LIVE_JS.read_text(), re.DOTALL)
    board = await boards.create(shards=2)
    await boards.set_totals(board, [(f"p{i:02d}", 100 - i) for i in range(25)])

    ranks, variables = [], {"board": board.id, "from": 11}
    while True:
        body = await gateway.query(more, variables)
        assert "errors" not in body, body
        page = body["data"]["leaderboard"]["entries"]
        ranks += [(e["rank"], e["userId"]) for e in page["entries"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        variables = {"board": board.id, "after": page["pageInfo"]["endCursor"]}
    assert ranks == [(i + 1, f"p{i:02d}") for i in range(10, 25)]
