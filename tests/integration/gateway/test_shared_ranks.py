"""sharedRank and topPercent through the gateway: every read that returns a RankedPlayer (top, player,
context, a period's reads, a closed board's archived result), both scopes, sharded or not, both tie
policies and sort orders. Equal scores share a rank (1 + the players strictly better: 1, 2, 2, 2, 5)."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime

import pytest
from cassandra.cluster import Session
from redis.asyncio import Redis

from regions.core.boards import Board, SortOrder, TiePolicy
from regions.core.periods import Period, WindowSpec, period_of
from regions.core.windows import encode_window
from regions.lifecycle.archive import archive_projection
from regions.runtime.settings import Settings
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.results import CassandraResults
from tests.integration.gateway.conftest import Boards, Gateway, serve_gateway
from tests.integration.gateway.test_persisted import planned

TOTALS = [("ann", 50), ("bob", 40), ("cat", 40), ("dan", 40), ("eve", 10), ("fay", 10)]
SHARED = {"ann": 1, "bob": 2, "cat": 2, "dan": 2, "eve": 5, "fay": 5}
RANKED = "rank userId sharedRank topPercent"
BOARD_READS = f"""
  top(k: 4, scope: $scope) {{ entries {{ {RANKED} }} }}
  player(userId: "dan", scope: $scope) {{ {RANKED} }}
  context(userId: "cat", range: 1, scope: $scope) {{ above {{ {RANKED} }} player {{ {RANKED} }} below {{ {RANKED} }} }}"""
READS = f"query($id: ID!, $scope: Scope) {{ leaderboard(id: $id) {{ {BOARD_READS} }} }}"
PERIOD_READS = f"""query($id: ID!, $scope: Scope) {{ leaderboard(id: $id) {{ {BOARD_READS}
  period {{ top(k: 6, scope: $scope) {{ entries {{ {RANKED} }} }} player(userId: "eve", scope: $scope) {{ {RANKED} }} }}
}} }}"""


def _check(players: list[dict[str, object]], count: int) -> None:
    for p in players:
        user, rank = str(p["userId"]), int(p["rank"])  # type: ignore[call-overload]
        assert (p["sharedRank"], p["topPercent"]) == (SHARED[user], pytest.approx(100 * rank / count)), p


def _ordered(order: SortOrder) -> list[tuple[str, int]]:
    """TOTALS with the same ties whichever way the board sorts (ASC: negated)."""
    return TOTALS if order is SortOrder.DESC else [(u, -t) for u, t in TOTALS]


@pytest.mark.parametrize("shards", [1, 3])
@pytest.mark.parametrize(
    ("order", "tie"), [(SortOrder.DESC, TiePolicy.USER_ID), (SortOrder.ASC, TiePolicy.FIRST_REACHED)]
)
async def test_ties_share_a_rank_in_top_player_and_context_on_every_board_and_scope(
    gateway: Gateway, boards: Boards, shards: int, order: SortOrder, tie: TiePolicy
) -> None:
    board = await boards.create(tie_policy=tie, sort_order=order, shards=shards)
    await boards.set_totals(board, _ordered(order))

    for scope in ("HOME", "REGIONAL"):
        body = await gateway.query(READS, {"id": board.id, "scope": scope})
        assert "errors" not in body, body
        lb = body["data"]["leaderboard"]
        assert lb["top"]["entries"][0]["userId"] == "ann"
        _check(lb["top"]["entries"], 6)
        _check([lb["player"]], 6)
        ctx = lb["context"]
        _check([*ctx["above"], ctx["player"], *ctx["below"]], 6)
        assert ctx["player"]["sharedRank"] == 2 and len(ctx["above"]) == len(ctx["below"]) == 1


@pytest.mark.parametrize("shards", [1, 2])
async def test_a_period_board_shares_ranks_in_its_current_period(
    gateway: Gateway, boards: Boards, cassandra_session: Session, shards: int
) -> None:
    spec = WindowSpec(Period.DAILY, time_zone="UTC")
    board = Board(f"gw-{uuid.uuid4().hex[:12]}", "daily", boards.settings.region,
                  window=encode_window(spec), shards=shards)  # fmt: skip
    assert await boards.catalog.create(board)
    today = period_of(spec, int(time.time() * 1000))
    await boards.set_totals(board.for_period(today.key), TOTALS)

    for scope in ("HOME", "REGIONAL"):
        body = await gateway.query(PERIOD_READS, {"id": board.id, "scope": scope})
        assert "errors" not in body, body
        lb = body["data"]["leaderboard"]
        for read in (
            lb["top"]["entries"],
            [lb["player"]],
            lb["period"]["top"]["entries"],
            [lb["period"]["player"]],
        ):
            _check(read, 6)
        assert [p["sharedRank"] for p in lb["period"]["top"]["entries"]] == [1, 2, 2, 2, 5, 5]


RESULT = """query($id: ID!, $first: Int, $after: Int) { leaderboard(id: $id) {
  result { entries(first: $first, after: $after) { rank userId score sharedRank topPercent } } } }"""
PAGE = """query($id: ID!, $after: Int) { leaderboard(id: $id) {
  result { entries(first: 2, after: $after) { rank sharedRank } } } }"""
FRAGMENT = """query($id: ID!, $after: Int) { leaderboard(id: $id) {
  result { entries(first: 2, after: $after) { rank ... on RankedPlayer { sharedRank } } } } }"""


async def test_a_closed_boards_result_shares_ranks_across_chunks(
    settings: Settings, gateway: Gateway, boards: Boards, cassandra_session: Session, redis_client: Redis
) -> None:
    board = await boards.create()
    ties = [("a0", 9), *((f"b{i}", 7) for i in range(7)), ("c0", 5), ("c1", 5), ("d0", 1)]
    shared = [1, 2, 2, 2, 2, 2, 2, 2, 9, 9, 11]
    await boards.set_totals(board, ties)
    assert await CassandraLifecycle(cassandra_session).begin_close(board.id, "end", datetime.now(UTC))
    await archive_projection(redis_client, gateway.settings.redis.key_prefix, CassandraResults(cassandra_session),
                             board, version=1, reason="end", chunk_size=2, created_at=datetime.now(UTC))  # fmt: skip

    for after in range(len(ties)):
        body = await gateway.query(RESULT, {"id": board.id, "first": 3, "after": after})
        assert "errors" not in body, body
        entries = body["data"]["leaderboard"]["result"]["entries"]
        assert [e["sharedRank"] for e in entries] == shared[after : after + 3]
        assert [e["topPercent"] for e in entries] == [pytest.approx(100 * e["rank"] / 11) for e in entries]
    uncached = settings.model_copy(
        update={"gateway": settings.gateway.model_copy(update={"top_cache_ttl_s": 0})}
    )
    async with serve_gateway(uncached, redis_client, cassandra_session) as gw:
        answered = planned("answered")
        # the generic executor, the document's plan, and a selection through a fragment
        for query in (PAGE, PAGE, FRAGMENT):
            body = await gw.query(query, {"id": board.id, "after": 6})
            assert body["data"]["leaderboard"]["result"]["entries"] == [
                {"rank": 7, "sharedRank": 2}, {"rank": 8, "sharedRank": 2},
            ]  # fmt: skip
        assert planned("answered") == answered + 1
