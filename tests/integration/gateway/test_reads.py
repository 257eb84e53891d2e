"""Reads over HTTP: top, player, context, playerCount, each with asOf; caps; the top-K micro-cache."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from redis.asyncio import Redis
from redis.exceptions import ResponseError

from regions.core.boards import SortOrder, TiePolicy
from schema.resources import lua_script
from tests.integration.gateway.conftest import Boards, Gateway, GatewayFactory, eventually

AS_OF = "asOf { region positions { region partition offset } newestAcceptedAt stale }"
BOARD = """query($id: ID!, $k: Int, $user: ID!, $range: Int) {
  leaderboard(id: $id) {
    id name homeRegion status sortOrder aggregation tiePolicy playerCount
    top(k: $k) { entries { rank userId score version } %s }
    player(userId: $user) { rank userId score %s }
    context(userId: $user, range: $range) {
      above { rank userId } player { rank userId score } below { rank userId } %s
    }
  }
}""".replace("%s", AS_OF)


async def test_top_player_context_and_count_with_as_of(gateway: Gateway, boards: Boards) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 50), ("bob", 40), ("cat", 40), ("dan", 10), ("eve", 5)])
    await boards.set_positions({0: 41, 2: 7}, accepted_ms=1_700_000_123_456)

    body = await gateway.query(BOARD, {"id": board.id, "k": 3, "user": "cat", "range": 1})

    lb = body["data"]["leaderboard"]
    assert (lb["status"], lb["sortOrder"], lb["tiePolicy"], lb["playerCount"]) == (
        "OPEN",
        "DESC",
        "USER_ID",
        5,
    )
    assert [(e["rank"], e["userId"], e["score"]) for e in lb["top"]["entries"]] == [
        (1, "ann", 50), (2, "bob", 40), (3, "cat", 40),
    ]  # fmt: skip
    as_of = lb["top"]["asOf"]
    assert as_of["positions"] == [
        {"region": "local", "partition": 0, "offset": 41},
        {"region": "local", "partition": 2, "offset": 7},
    ]
    assert datetime.fromisoformat(as_of["newestAcceptedAt"]) == datetime.fromtimestamp(1_700_000_123.456, UTC)
    assert as_of["stale"] is False
    assert lb["player"]["rank"] == 3 and lb["player"]["asOf"]["positions"] == as_of["positions"]
    ctx = lb["context"]
    assert [e["userId"] for e in ctx["above"]] == ["bob"]
    assert ctx["player"] == {"rank": 3, "userId": "cat", "score": 40}
    assert [e["userId"] for e in ctx["below"]] == ["dan"]


async def test_context_has_fewer_entries_at_a_boundary_and_null_for_no_score(
    gateway: Gateway, boards: Boards
) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 3), ("bob", 2), ("cat", 1)])
    query = """query($id: ID!, $user: ID!) { leaderboard(id: $id) {
        context(userId: $user, range: 4) { above { userId } player { rank } below { userId } }
        player(userId: $user) { rank } } }"""

    first = (await gateway.query(query, {"id": board.id, "user": "ann"}))["data"]["leaderboard"]
    last = (await gateway.query(query, {"id": board.id, "user": "cat"}))["data"]["leaderboard"]
    nobody = (await gateway.query(query, {"id": board.id, "user": "zed"}))["data"]["leaderboard"]

    assert first["context"] == {
        "above": [],
        "player": {"rank": 1},
        "below": [{"userId": "bob"}, {"userId": "cat"}],
    }
    assert last["context"]["above"] == [{"userId": "ann"}, {"userId": "bob"}]
    assert last["context"]["below"] == []
    assert nobody == {"context": None, "player": None}


async def test_stale_as_of_without_positions_and_unknown_board_is_null(
    gateway: Gateway, boards: Boards
) -> None:
    board = await boards.create()
    body = await gateway.query(
        "query($id: ID!) { leaderboard(id: $id) { top { entries { userId } asOf { positions { offset } stale } } }"
        ' missing: leaderboard(id: "no-such-board") { id } }',
        {"id": board.id},
    )

    assert body["data"]["leaderboard"]["top"] == {"entries": [], "asOf": {"positions": [], "stale": True}}
    assert body["data"]["missing"] is None


async def test_long_scores_beyond_32_bits_are_exact_json_numbers(gateway: Gateway, boards: Boards) -> None:
    board = await boards.create(sort_order=SortOrder.ASC)
    big = 2**53 - 1
    await boards.set_totals(board, [("ann", big), ("bob", -(2**40))])

    response = await gateway.http.post(
        gateway.url,
        json={"query": f'{{ leaderboard(id: "{board.id}") {{ top {{ entries {{ userId score }} }} }} }}'},
    )

    assert f'"score":{big}' in response.text
    entries = response.json()["data"]["leaderboard"]["top"]["entries"]
    assert entries == [{"userId": "bob", "score": -(2**40)}, {"userId": "ann", "score": big}]


async def test_first_reached_ties_in_top_and_context(gateway: Gateway, boards: Boards) -> None:
    board = await boards.create(tie_policy=TiePolicy.FIRST_REACHED)
    await boards.set_totals(board, [("zed", 10), ("amy", 10), ("bob", 20)])

    body = await gateway.query(
        "query($id: ID!) { leaderboard(id: $id) { top { entries { userId } }"
        ' context(userId: "amy", range: 1) { above { userId } player { rank } } } }',
        {"id": board.id},
    )

    lb = body["data"]["leaderboard"]
    assert [e["userId"] for e in lb["top"]["entries"]] == ["bob", "zed", "amy"]
    assert lb["context"] == {"above": [{"userId": "zed"}], "player": {"rank": 3}}


async def test_k_and_range_over_their_caps_are_clear_errors(
    gateway_factory: GatewayFactory, boards: Boards
) -> None:
    board = await boards.create()
    async with gateway_factory(max_top_k=20, max_context_range=3) as gw:
        over_k = await gw.query(
            "query($id: ID!) { leaderboard(id: $id) { top(k: 21) { entries { rank } } } }", {"id": board.id}
        )
        over_range = await gw.query(
            'query($id: ID!) { leaderboard(id: $id) { context(userId: "a", range: 4) { player { rank } } } }',
            {"id": board.id},
        )
        at_cap = await gw.query(
            "query($id: ID!) { leaderboard(id: $id) { top(k: 20) { entries { rank } } } }", {"id": board.id}
        )

    assert over_k["errors"][0]["message"] == "k must be between 1 and 20, got 21"
    assert over_k["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"
    assert over_range["errors"][0]["message"] == "range must be between 0 and 3, got 4"
    assert "errors" not in at_cap


async def test_top_k_micro_cache_returns_its_own_as_of(
    gateway_factory: GatewayFactory, boards: Boards
) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 1)])
    await boards.set_positions({0: 1}, accepted_ms=1_700_000_000_000)
    query = "query($id: ID!) { leaderboard(id: $id) { top { entries { userId score } asOf { positions { offset } } } } }"
    async with gateway_factory(top_cache_ttl_s=1.0) as gw:
        first = await gw.query(query, {"id": board.id})
        await boards.set_totals(board, [("ann", 99)])
        await boards.advance({0: 2}, 1_700_000_000_001)
        cached = await gw.query(query, {"id": board.id})
        await asyncio.sleep(1.1)
        fresh = await gw.query(query, {"id": board.id})
        await gw.query(query, {"id": board.id})  # cached again
        await boards.set_totals(board, [("ann", 7)], hint=True)  # a hint makes cached pages unusable
        await eventually(lambda: _top_score(gw, board.id, 7))
        hinted = await gw.query(query, {"id": board.id})

    assert cached == first
    assert hinted["data"]["leaderboard"]["top"]["entries"] == [{"userId": "ann", "score": 7}]
    assert first["data"]["leaderboard"]["top"] == {
        "entries": [{"userId": "ann", "score": 1}],
        "asOf": {"positions": [{"offset": 1}]},
    }
    assert fresh["data"]["leaderboard"]["top"] == {
        "entries": [{"userId": "ann", "score": 99}],
        "asOf": {"positions": [{"offset": 2}]},
    }


async def _top_score(gw: Gateway, board_id: str, score: int) -> bool:
    body = await gw.query(
        "query($id: ID!) { leaderboard(id: $id) { top { entries { score } } } }", {"id": board_id}
    )
    return bool(body["data"]["leaderboard"]["top"]["entries"][0]["score"] == score)


async def test_leaderboards_lists_boards_by_status(gateway: Gateway, boards: Boards) -> None:
    board = await boards.create()

    body = await gateway.query(
        "{ open: leaderboards(status: OPEN) { id } closed: leaderboards(status: CLOSED) { id } }"
    )

    assert board.id in [b["id"] for b in body["data"]["open"]]
    assert board.id not in [b["id"] for b in body["data"]["closed"]]


async def test_regional_and_home_scope_read_this_region(gateway: Gateway, boards: Boards) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 1)])

    body = await gateway.query(
        "query($id: ID!) { leaderboard(id: $id) { home: top(scope: HOME) { asOf { region } }"
        " regional: top(scope: REGIONAL) { entries { userId } asOf { region } } } }",
        {"id": board.id},
    )

    lb = body["data"]["leaderboard"]
    assert lb["home"]["asOf"]["region"] == lb["regional"]["asOf"]["region"] == "local"
    assert lb["regional"]["entries"] == [{"userId": "ann"}]


@pytest.mark.parametrize(
    "args",
    [
        ["player", "", 0],
        [10, 0],
        ["top", 0],
        ["player", "ann", -1],
        ["rank", "ann", 0],
        ["around", "x", "ann", 1],
        ["around", -3, "ann", -1],
        ["slice", 0, 100001],
        ["counts", "1", "ann", "2"],
        ["counts", "x", "ann"],
    ],
    ids=[
        "empty-user",
        "old-top-form",
        "top-zero",
        "negative-range",
        "unknown-form",
        "around-no-score",
        "around-negative-range",
        "slice-too-long",
        "counts-unpaired",
        "counts-no-score",
    ],
)
async def test_the_window_script_refuses_a_malformed_read_instead_of_walking_the_board(
    redis_client: Redis, boards: Boards, args: list[str | int]
) -> None:
    board = await boards.create()
    await boards.set_totals(board, [("ann", 3), ("bob", 2)])
    layout = await boards.projection.layouts.live_one(board.id)
    assert layout is not None
    keys = layout.shard(boards.settings.redis.key_prefix, 0)
    script = redis_client.register_script(lua_script("read_window"))
    assert (await script(keys=[keys.ranking, keys.state], args=[keys.buckets, 0, "top", 1]))[0] == "ok"

    with pytest.raises(ResponseError, match="read_window"):
        await script(keys=[keys.ranking, keys.state], args=[keys.buckets, 0, *args])
