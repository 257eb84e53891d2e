"""End to end on two whole regions (``tests.multi_region``: eu and us, each on a Kafka cluster and a
Redis of its own, with its processor, projector, intake, gateway and a replicator from the other):
the reads of a board screen through each region's gateway, after awards accepted in both regions.

Every test reads through both gateways; HOME is the board's home region's (eu) projection, REGIONAL
the gateway's own region's. The regions are started once for the module and shared by its tests,
each on boards of its own; every wait is for a condition (positions covered, an update received).
Covered, on an all-time board of one sorted set and on a sharded one: pages walked forwards and
backwards (and a cursor read in one region continued in the other; HOME through us's gateway is
eu's REGIONAL, with an asOf that covers every acknowledged award), ``fromRank`` (deep enough on a
board of 300 players that the jump samples the shards), friends lists with ``rankAmong``, shared
ranks and ``topPercent`` with ties, the metadata of the award holding the score (MAX: the best, one
that came by replication included; SUM: the newest applied), ``?wait=applied`` at each region's
intake, a DAILY board's period read by pages and by a friends list, and
``leaderboardUpdates(userIds)`` telling of a followed player whose award was accepted in the other
region.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from regions.core.boards import Aggregation, Board, TiePolicy
from regions.core.periods import Period, WindowSpec
from regions.core.windows import encode_window
from tests.e2e.gateway.conftest import GatewayProcess
from tests.e2e.gateway.two_regions import module_regions
from tests.harness import Region
from tests.integration.gateway.test_subscriptions import TRANSPORT_WS
from tests.multi_region import Deployment, Oracle

WITHIN_S = 60.0  # every region converges within it (replication included)
SCOPES = ("HOME", "REGIONAL")
PLAYERS = 20
ENTRY = "rank userId score sharedRank topPercent"
PAGE = """query($b: ID!, $scope: Scope, $first: Int, $after: String, $last: Int, $before: String,
                $from: Int) { leaderboard(id: $b) {
  entries(first: $first, after: $after, last: $last, before: $before, fromRank: $from, scope: $scope) {
    entries { ENTRY } pageInfo { startCursor endCursor hasNextPage hasPreviousPage }
    totalCount asOf { region stale positions { region partition offset } } } } }""".replace("ENTRY", ENTRY)
LISTED = """query($b: ID!, $users: [ID!]!, $scope: Scope) { leaderboard(id: $b) {
  players(userIds: $users, scope: $scope) {
    entries { userId rankAmong player { ENTRY } } asOf { region } } } }""".replace("ENTRY", ENTRY)
RANKS = """query($b: ID!, $u: ID!, $scope: Scope) { leaderboard(id: $b) {
  top(k: 100, scope: $scope) { entries { ENTRY } asOf { region } }
  player(userId: $u, scope: $scope) { ENTRY } } }""".replace("ENTRY", ENTRY)
METADATA = """query($b: ID!, $scope: Scope) { leaderboard(id: $b) {
  top(k: 10, scope: $scope) { entries { userId score metadata } asOf { region } }
  player(userId: "ann", scope: $scope) { score metadata } } }"""
FOLLOW = """subscription($b: ID!, $users: [ID!], $scope: Scope) {
  leaderboardUpdates(leaderboardId: $b, userIds: $users, scope: $scope) {
    __typename ... on ScoreUpdated { userId score asOf { region } } ... on RankChanged { userId }
    ... on Resync { reason } } }"""


# eu and us with what reads need (no audit sink: nothing here reads the history), a gateway each.
regions = module_regions("reads-two-regions", services=("processor", "projector", "intake"))


async def _board(d: Deployment, **rules: Any) -> Board:
    board = Board(f"reads-{uuid.uuid4().hex[:10]}", "Two regions", "eu", **rules)
    await d.regions["eu"].create_board(board)  # the catalog is global: us's intake resolves it too
    return board


async def _converged(d: Deployment, board: Board, oracle: Oracle) -> None:
    """Until every region's projection covers every acknowledged award (and holds the oracle's totals)."""
    await Region.wait_until(lambda: d.converged(board.id, oracle), WITHIN_S, f"{board.id} converged")


async def _sent(oracle: Oracle, region: Region, award: dict[str, Any], wait: bool = False) -> dict[str, Any]:
    """An award acknowledged by ``region``'s intake (its position kept in ``oracle``): its answer."""
    params = {"wait": "applied", "timeoutMs": "2000"} if wait else None
    response = await region.client.send(award, params)
    assert response.status_code == 202, response.text
    [accepted] = response.json()["accepted"]
    key = (accepted["region"], accepted["partition"])
    oracle.acked[key] = max(oracle.acked.get(key, -1), accepted["offset"])
    return accepted  # type: ignore[no-any-return]


async def _query(gateway: GatewayProcess, query: str, **variables: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(gateway.url, json={"query": query, "variables": variables})
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    return body["data"]["leaderboard"]  # type: ignore[no-any-return]


def _reads(d: Deployment) -> list[tuple[str, GatewayProcess, str, str]]:
    """(gateway's region, gateway, scope, the region whose projection answers) of every read."""
    return [
        (name, gw, scope, "eu" if scope == "HOME" else name)
        for name, gw in d.gateways.items()
        for scope in SCOPES
    ]


# ------------------------------------------------------------------ a board ranked in both regions


@dataclass(frozen=True)
class Ranked:
    board: Board
    expected: list[dict[str, Any]]  # every entry, in rank order, as ENTRY selects it
    acked: dict[tuple[str, int], int]  # the highest acknowledged offset of each (region, partition)

    def of(self, user: str) -> dict[str, Any]:
        return next(e for e in self.expected if e["userId"] == user)


def _expected(totals: dict[str, int]) -> list[dict[str, Any]]:
    """Entries of a DESC board with USER_ID ties: equal scores share the rank of the first of them."""
    order = sorted(totals.items(), key=lambda t: (-t[1], t[0]))
    n = len(order)
    return [
        {"rank": i, "userId": user, "score": score, "topPercent": 100.0 * i / n,
         "sharedRank": 1 + sum(other > score for _, other in order)}
        for i, (user, score) in enumerate(order, start=1)
    ]  # fmt: skip


@pytest.fixture(scope="module", params=[1, 4], ids=["all-time", "sharded"])
async def ranked(regions: Deployment, request: pytest.FixtureRequest) -> Ranked:
    """A board (one sorted set, or 4 shards) whose 20 players score in threes (100, 100, 100, 90,
    ...): some only through eu, some only through us, most through both, and some awards retried in
    the other region (one event, acknowledged twice); converged in both regions."""
    d, oracle = regions, Oracle()
    eu, us = d.regions["eu"], d.regions["us"]
    board = await _board(d, tie_policy=TiePolicy.USER_ID, shards=request.param)
    for i in range(PLAYERS):
        user, total = f"p{i:02d}", 100 - 10 * (i // 3)
        first = total if i % 5 == 0 else total // 2 + i % 3
        await oracle.send(eu if i % 2 else us, board.id, user, f"m{i}-a", first)
        if first < total:
            await oracle.send(us if i % 2 else eu, board.id, user, f"m{i}-b", total - first)
        if i % 4 == 0:  # a retry of the first award through the other region
            await oracle.send(us if i % 2 else eu, board.id, user, f"m{i}-a", first)
    assert oracle.acks > len(oracle.amounts) and {r for r, _ in oracle.acked} == {"eu", "us"}
    await _converged(d, board, oracle)
    return Ranked(board, _expected(oracle.totals()), dict(oracle.acked))


def _covers(as_of: dict[str, Any], acked: dict[tuple[str, int], int]) -> bool:
    """Whether an asOf's positions reach every acknowledged award (I5: asOf[p] >= o)."""
    at = {(p["region"], p["partition"]): p["offset"] for p in as_of["positions"]}
    return all(at.get(key, -1) >= offset for key, offset in acked.items())


async def _walk(
    gateway: GatewayProcess, board: str, scope: str, forwards: bool, acked: dict[tuple[str, int], int]
) -> list[dict[str, Any]]:
    """Every entry, page after page of 6 (forwards from the first; backwards from the last),
    checking each page's info and that its asOf covers every acknowledged award; in rank order."""
    pages: list[list[dict[str, Any]]] = []
    cursor = None
    while True:
        if forwards:
            found = await _query(gateway, PAGE, b=board, scope=scope, first=6, after=cursor)
        else:
            found = await _query(gateway, PAGE, b=board, scope=scope, last=6, before=cursor)
        page = found["entries"]
        info, more = page["pageInfo"], page["pageInfo"]["hasNextPage" if forwards else "hasPreviousPage"]
        assert page["totalCount"] == PLAYERS and not page["asOf"]["stale"], page
        assert _covers(page["asOf"], acked), (page["asOf"], acked)
        assert info["hasPreviousPage" if forwards else "hasNextPage"] == bool(pages), info
        pages.append(page["entries"])
        if not more:
            break
        cursor = info["endCursor" if forwards else "startCursor"]
        assert len(pages) < PLAYERS, "the walk does not end"
    ordered = pages if forwards else pages[::-1]
    return [entry for p in ordered for entry in p]


async def test_pages_walk_the_same_board_both_ways_in_both_regions_and_scopes(
    regions: Deployment, ranked: Ranked
) -> None:
    board = ranked.board.id
    for region, gateway, scope, answering in _reads(regions):
        where = f"{region} gateway, {scope}"
        assert await _walk(gateway, board, scope, True, ranked.acked) == ranked.expected, where
        assert await _walk(gateway, board, scope, False, ranked.acked) == ranked.expected, where
        middle = await _query(gateway, PAGE, b=board, scope=scope, first=5, **{"from": PLAYERS // 2})
        assert middle["entries"]["entries"] == ranked.expected[PLAYERS // 2 - 1 : PLAYERS // 2 + 4], where
        assert middle["entries"]["asOf"]["region"] == answering, where

    # a cursor read in one region goes on in the other (converged regions order alike)
    first = await _query(regions.gateways["eu"], PAGE, b=board, scope="REGIONAL", first=7)
    cursor = first["entries"]["pageInfo"]["endCursor"]
    after = await _query(regions.gateways["us"], PAGE, b=board, scope="REGIONAL", first=7, after=cursor)
    assert after["entries"]["entries"] == ranked.expected[7:14]
    assert after["entries"]["asOf"]["region"] == "us"

    # HOME through us's gateway is eu's own projection: the same page as eu's REGIONAL, both asOf of
    # eu covering every acknowledged award (their offsets may differ: heartbeats move them on)
    home = await _query(regions.gateways["us"], PAGE, b=board, scope="HOME", first=8, **{"from": 5})
    local = await _query(regions.gateways["eu"], PAGE, b=board, scope="REGIONAL", first=8, **{"from": 5})
    assert home["entries"]["entries"] == local["entries"]["entries"] == ranked.expected[4:12]
    assert home["entries"]["pageInfo"] == local["entries"]["pageInfo"]
    for read in (home, local):
        as_of = read["entries"]["asOf"]
        assert as_of["region"] == "eu" and _covers(as_of, ranked.acked), as_of


async def test_from_rank_deep_in_a_sharded_board_reads_the_same_slice_in_both_regions(
    regions: Deployment,
) -> None:
    d, oracle = regions, Oracle()
    board = await _board(d, tie_policy=TiePolicy.USER_ID, shards=4)
    totals = {f"q{i:03d}": 1000 - 5 * (i // 4) for i in range(300)}  # ties of four
    for name, intake in d.regions.items():  # each player's points half through eu, half through us
        awards = [_points(board, user, f"m-{name}-{user}", total // 2) for user, total in totals.items()]
        await oracle.send_all(intake, awards)
    expected = _expected({user: total // 2 * 2 for user, total in totals.items()})
    await _converged(d, board, oracle)
    for region, gateway, scope, answering in _reads(d):
        for rank, first in ((1, 10), (150, 30), (271, 30), (300, 5)):
            page = (await _query(gateway, PAGE, b=board.id, scope=scope, first=first, **{"from": rank}))[
                "entries"
            ]
            where = f"{region} gateway, {scope}, fromRank {rank}"
            assert page["entries"] == expected[rank - 1 : rank - 1 + first], where
            assert (page["totalCount"], page["pageInfo"]["hasNextPage"]) == (300, rank - 1 + first < 300), (
                where
            )
            assert page["asOf"]["region"] == answering and _covers(page["asOf"], oracle.acked), where


async def test_a_friends_list_is_ranked_among_itself_on_both_regions(
    regions: Deployment, ranked: Ranked
) -> None:
    asked = ["p13", "nobody", "p07", "p02", "p13", "p19", "p00"]  # p13 twice; nobody has no score
    scored = sorted({u for u in asked if u != "nobody"}, key=lambda u: ranked.of(u)["rank"])
    want = [{"userId": u, "rankAmong": i, "player": ranked.of(u)} for i, u in enumerate(scored, start=1)]
    want.append({"userId": "nobody", "rankAmong": None, "player": None})
    for region, gateway, scope, answering in _reads(regions):
        listed = (await _query(gateway, LISTED, b=ranked.board.id, users=asked, scope=scope))["players"]
        assert listed["entries"] == want, f"{region} gateway, {scope}"
        assert listed["asOf"]["region"] == answering


async def test_tied_players_share_their_rank_and_top_percent_on_both_regions(
    regions: Deployment, ranked: Ranked
) -> None:
    tied = ranked.expected[4]  # p04: 90, tied with p03 and p05, so shared rank 4 at rank 5
    assert (tied["userId"], tied["rank"], tied["sharedRank"], tied["topPercent"]) == ("p04", 5, 4, 25.0)
    for region, gateway, scope, answering in _reads(regions):
        read = await _query(gateway, RANKS, b=ranked.board.id, u="p04", scope=scope)
        assert read["top"]["entries"] == ranked.expected, f"{region} gateway, {scope}"
        assert read["top"]["asOf"]["region"] == answering
        assert read["player"] == tied


# ------------------------------------------------------------------ metadata


def _run(board: Board, user: str, score: int, metadata: dict[str, str] | None = None) -> dict[str, Any]:
    award: dict[str, Any] = {"leaderboardId": board.id, "matchId": f"m-{uuid.uuid4().hex[:10]}",
                             "userId": user, "awardType": "run", "score": score}  # fmt: skip
    return award if metadata is None else {**award, "metadata": metadata}


async def test_both_regions_show_the_metadata_of_the_award_holding_the_best(regions: Deployment) -> None:
    d, oracle = regions, Oracle()
    eu, us = d.regions["eu"], d.regions["us"]
    board = await _board(d, aggregation=Aggregation.MAX)
    await _sent(oracle, eu, _run(board, "ann", 70, {"replay": "r70"}))
    await _sent(oracle, us, _run(board, "ann", 90, {"replay": "r90", "map": "dune"}))  # the best, from us
    await _sent(oracle, eu, _run(board, "ann", 80))  # not the best: its missing metadata changes nothing
    await _sent(oracle, eu, _run(board, "bob", 60, {"deck": "red"}))
    await _sent(oracle, us, _run(board, "cat", 50))
    await _converged(d, board, oracle)

    best = {"map": "dune", "replay": "r90"}
    for region, gateway, scope, answering in _reads(d):
        read = await _query(gateway, METADATA, b=board.id, scope=scope)
        assert read["top"]["entries"] == [
            {"userId": "ann", "score": 90, "metadata": best},
            {"userId": "bob", "score": 60, "metadata": {"deck": "red"}},
            {"userId": "cat", "score": 50, "metadata": None},
        ], f"{region} gateway, {scope}"
        assert read["top"]["asOf"]["region"] == answering
        assert read["player"] == {"score": 90, "metadata": best}


async def test_both_regions_show_the_metadata_of_the_newest_award_applied_to_a_sum(
    regions: Deployment,
) -> None:
    d, oracle = regions, Oracle()
    eu, us = d.regions["eu"], d.regions["us"]
    board = await _board(d, aggregation=Aggregation.SUM, shards=4)
    sums = """query($b: ID!, $scope: Scope) { leaderboard(id: $b) {
      entries(first: 10, scope: $scope) { entries { userId score metadata } }
      players(userIds: ["ann", "bob"], scope: $scope) { entries { userId player { score metadata } } } } }"""

    async def shown(expected: list[dict[str, Any]]) -> None:
        await _converged(d, board, oracle)  # each award applied in both regions before the next one
        for region, gateway, scope, _ in _reads(d):
            read = await _query(gateway, sums, b=board.id, scope=scope)
            assert read["entries"]["entries"] == expected, f"{region} gateway, {scope}"
            listed = {e["userId"]: e["player"] for e in read["players"]["entries"]}
            assert listed == {e["userId"]: {"score": e["score"], "metadata": e["metadata"]} for e in expected}

    await _sent(oracle, eu, {**_points(board, "ann", "s1", 30), "metadata": {"match": "s1"}})
    await _sent(oracle, us, {**_points(board, "bob", "s2", 20), "metadata": {"match": "s2"}})
    await shown([{"userId": "ann", "score": 30, "metadata": {"match": "s1"}},
                 {"userId": "bob", "score": 20, "metadata": {"match": "s2"}}])  # fmt: skip
    await _sent(oracle, us, {**_points(board, "ann", "s3", 5), "metadata": {"match": "s3"}})  # newest: us's
    await shown([{"userId": "ann", "score": 35, "metadata": {"match": "s3"}},
                 {"userId": "bob", "score": 20, "metadata": {"match": "s2"}}])  # fmt: skip
    await _sent(oracle, eu, _points(board, "bob", "s4", 1))  # the newest has none: none is shown
    await shown([{"userId": "ann", "score": 35, "metadata": {"match": "s3"}},
                 {"userId": "bob", "score": 21, "metadata": None}])  # fmt: skip


# ------------------------------------------------------------------ a board with daily periods

PERIOD_READS = """query($b: ID!, $scope: Scope, $users: [ID!]!) { leaderboard(id: $b) { period {
  key entries(first: 2, scope: $scope) { entries { ENTRY } pageInfo { endCursor hasNextPage } totalCount }
  rest: entries(fromRank: 3, scope: $scope) { entries { ENTRY } }
  players(userIds: $users, scope: $scope) { entries { userId rankAmong player { ENTRY } } } } } }""".replace(
    "ENTRY", ENTRY
)


async def test_a_daily_boards_period_is_paged_and_listed_alike_in_both_regions(regions: Deployment) -> None:
    d, oracle = regions, Oracle()
    eu, us = d.regions["eu"], d.regions["us"]
    board = await _board(d, tie_policy=TiePolicy.USER_ID, window=encode_window(WindowSpec(Period.DAILY)))
    now = datetime.now(UTC)
    for intake, user, amount in ((eu, "ann", 40), (us, "bob", 40), (eu, "cat", 25), (us, "dan", 10)):
        award = {**_points(board, user, f"d-{user}", amount), "occurredAt": now.isoformat()}
        await _sent(oracle, intake, award)
    await _converged(d, board, oracle)
    expected = _expected({"ann": 40, "bob": 40, "cat": 25, "dan": 10})
    for region, gateway, scope, _ in _reads(d):
        period = (await _query(gateway, PERIOD_READS, b=board.id, scope=scope, users=["dan", "zed", "bob"]))[
            "period"
        ]
        where = f"{region} gateway, {scope}"
        assert period["key"] == now.strftime("%Y-%m-%d"), where  # the board's zone: UTC
        assert (period["entries"]["entries"], period["entries"]["totalCount"]) == (expected[:2], 4), where
        assert period["entries"]["pageInfo"]["hasNextPage"] and period["rest"]["entries"] == expected[2:], (
            where
        )
        assert period["players"]["entries"] == [
            {"userId": "bob", "rankAmong": 1, "player": expected[1]},
            {"userId": "dan", "rankAmong": 2, "player": expected[3]},
            {"userId": "zed", "rankAmong": None, "player": None},
        ], where


# ------------------------------------------------------------------ wait=applied


def _points(board: Board, user: str, match: str, amount: int) -> dict[str, Any]:
    return {
        "leaderboardId": board.id,
        "matchId": match,
        "userId": user,
        "awardType": "points",
        "delta": amount,
    }


def _at(score: int, rank: int, shared_rank: int, changed: bool = True) -> dict[str, Any]:
    return {"score": score, "rank": rank, "sharedRank": shared_rank, "changed": changed}


@pytest.mark.parametrize("shards", [1, 4], ids=["all-time", "sharded"])
async def test_each_regions_intake_answers_the_rank_in_its_own_projection(
    regions: Deployment, shards: int
) -> None:
    d, oracle = regions, Oracle()
    eu, us = d.regions["eu"], d.regions["us"]
    board = await _board(d, tie_policy=TiePolicy.USER_ID, shards=shards)
    for region in (eu, us):  # warm: the board's first award seen in both regions (1 point each)
        await _sent(oracle, region, _points(board, f"warm-{region.settings.region}", "w", 1))
    await _converged(d, board, oracle)

    assert (await _sent(oracle, eu, _points(board, "ann", "m1", 30), wait=True))["applied"] == _at(30, 1, 1)
    await _converged(d, board, oracle)  # ann's 30 reached us
    # us's answers count ann's award, accepted in eu, in its own projection
    assert (await _sent(oracle, us, _points(board, "bob", "m2", 20), wait=True))["applied"] == _at(20, 2, 2)
    tie = _points(board, "bob", "m3", 10)
    assert (await _sent(oracle, us, tie, wait=True))["applied"] == _at(30, 2, 1)  # tied with ann: by id
    assert (await _sent(oracle, us, tie, wait=True))["applied"] == _at(30, 2, 1, changed=False)  # a repeat
    await _converged(d, board, oracle)  # bob's awards reached eu
    retried = await _sent(oracle, eu, tie, wait=True)  # the same award retried through eu: counted once
    assert (retried["region"], retried["applied"]) == ("eu", _at(30, 2, 1, changed=False))
    assert await eu.total_of(board.id, "bob") == await us.total_of(board.id, "bob") == 30


# ------------------------------------------------------------------ updates of followed players


@contextlib.asynccontextmanager
async def _following(
    gateway: GatewayProcess, board: Board, users: list[str], scope: str
) -> AsyncIterator[ClientConnection]:
    async with connect(gateway.ws_url, subprotocols=[TRANSPORT_WS]) as ws:
        await ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        variables = {"b": board.id, "users": users, "scope": scope}
        await ws.send(
            json.dumps({"id": "1", "type": "subscribe", "payload": {"query": FOLLOW, "variables": variables}})
        )
        yield ws


async def _score_updated(ws: ClientConnection, user: str, followed: list[str]) -> dict[str, Any]:
    """The subscription's first ScoreUpdated of ``user`` (30 s at most); no update names a player
    it does not follow."""
    seen: list[dict[str, Any]] = []
    try:
        async with asyncio.timeout(30):
            while True:
                message = json.loads(await ws.recv())
                assert message["type"] == "next", message
                update = message["payload"]["data"]["leaderboardUpdates"]
                seen.append(update)
                assert update.get("userId", followed[0]) in followed, seen
                if update["__typename"] == "ScoreUpdated" and update["userId"] == user:
                    return update  # type: ignore[no-any-return]
    except TimeoutError:
        raise AssertionError(f"no ScoreUpdated of {user} within 30 s; received {seen}") from None


async def _joined(gateway: GatewayProcess, count: float) -> bool:
    return await gateway.subscriptions() == count


async def test_followed_players_hear_of_awards_accepted_in_the_other_region(regions: Deployment) -> None:
    d, oracle = regions, Oracle()
    eu, us = d.regions["eu"], d.regions["us"]
    eu_gw, us_gw = d.gateways["eu"], d.gateways["us"]
    board = await _board(d)
    before = {"eu": await eu_gw.subscriptions(), "us": await us_gw.subscriptions()}
    async with (
        _following(eu_gw, board, ["ann", "cat"], "HOME") as eu_home,  # eu's projection
        _following(us_gw, board, ["bob", "cat"], "REGIONAL") as us_regional,  # us's projection
        _following(us_gw, board, ["ann", "dan"], "HOME") as us_home,  # eu's projection, from us
    ):
        # each followed player counts once it is told updates (its baseline read)
        await Region.wait_until(lambda: _joined(eu_gw, before["eu"] + 2), 30, "eu's subscription joined")
        await Region.wait_until(lambda: _joined(us_gw, before["us"] + 4), 30, "us's subscriptions joined")
        await _sent(oracle, us, _points(board, "ann", "m1", 5))  # accepted in us
        await _sent(oracle, eu, _points(board, "bob", "m2", 7))  # accepted in eu
        heard = await asyncio.gather(
            _score_updated(eu_home, "ann", ["ann", "cat"]),
            _score_updated(us_regional, "bob", ["bob", "cat"]),
            _score_updated(us_home, "ann", ["ann", "dan"]),
        )
    assert [(u["userId"], u["score"], u["asOf"]["region"]) for u in heard] == [
        ("ann", 5, "eu"), ("bob", 7, "us"), ("ann", 5, "eu"),
    ]  # fmt: skip
