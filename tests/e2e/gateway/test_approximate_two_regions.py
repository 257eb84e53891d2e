"""End to end on two whole regions (``tests.multi_region``: eu and us, each with its processor,
projector, intake, lifecycle worker and gateway, and a replicator from the other): an approximate
(trending) board homed in eu, its awards accepted in both regions.

- Convergence: items played through eu, through us, and some plays sent to both (one event, two
  copies), then more while us is cut off from eu (eu cannot read us's awards, us still reads eu's),
  then healed: both regions' ``top(k)``, through both gateways in both scopes, answer the same
  candidates, the same estimates (those the pure sketch folds from the acknowledged awards of each
  partition), each verified at its true count, and the same error bound.
- Moderation: a hidden item leaves every top(k) of both regions while its plays keep counting (one
  accepted in us); restored, it comes back with its exact count.

The regions are started once for the module; every wait is for a condition (reads that show it).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

import httpx

from regions.core.approximate import ApproximateSpec
from regions.core.boards import Board
from regions.core.candidates import ranked
from regions.core.sketch import Shape, Sketch, error_bound
from regions.stores.kafka.clients import partition_of_key
from schema.records import totals_key
from tests.e2e.gateway.conftest import GatewayProcess
from tests.e2e.gateway.two_regions import module_regions
from tests.harness import Region, points
from tests.multi_region import Deployment, Oracle

WITHIN_S = 90.0
K, EPSILON, DELTA = 10, 0.01, 0.01
ADMIN = {"Authorization": "Bearer dev-admin-token"}
SCOPES = ("HOME", "REGIONAL")
TOP = """query($b: ID!, $k: Int, $scope: Scope) { leaderboard(id: $b) { top(k: $k, scope: $scope) {
  estimated errorBound entries { rank userId score verified exactScore }
  asOf { region positions { region partition offset } } } } }"""
HIDE = """mutation($b: ID!, $u: ID!) { hidePlayer(leaderboardId: $b, userId: $u, reason: "bots") { sequence } }"""
RESTORE = """mutation($b: ID!, $u: ID!) { restorePlayer(leaderboardId: $b, userId: $u, reason: "ok") { sequence } }"""

# eu and us with what moderation needs (the home lifecycle worker writes the actions), a gateway each.
regions = module_regions("approximate-two-regions", services=("processor", "projector", "intake", "lifecycle"),
                         env={"LB_LIFECYCLE__POLL_INTERVAL_S": "0.2"})  # fmt: skip


async def _board(d: Deployment) -> Board:
    board = Board(f"trend-{uuid.uuid4().hex[:10]}", "Trending", "eu", approximate=ApproximateSpec(K, EPSILON, DELTA))
    await d.regions["eu"].create_board(board)  # the catalog is global: us's intake resolves it too
    return board


async def _data(gateway: GatewayProcess, query: str, admin: bool = False, **variables: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(gateway.url, json={"query": query, "variables": variables},
                                   headers=ADMIN if admin else {})  # fmt: skip
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    return body["data"]  # type: ignore[no-any-return]


async def _tops(d: Deployment, board: Board) -> dict[tuple[str, str], dict[str, Any]]:
    """(gateway's region, scope) -> the top(k) page it answers."""
    found = {}
    for name, gateway in d.gateways.items():
        for scope in SCOPES:
            found[(name, scope)] = (await _data(gateway, TOP, b=board.id, k=K, scope=scope))["leaderboard"]["top"]
    return found


def _expected(board: Board, oracle: Oracle, partitions: int) -> dict[str, Any]:
    """The page every read should answer once converged: each partition's sketch folded by the pure
    core from the distinct acknowledged awards of its items, every item a candidate (there is room
    for all), its exact count verified, the error bound epsilon x the total."""
    shape = Shape.of(EPSILON, DELTA)
    sketches: dict[int, Sketch] = defaultdict(lambda: Sketch(shape, lambda _: None))
    for user, amount in oracle.amounts.values():
        sketches[partition_of_key(totals_key(board.id, user), list(range(partitions)))].add(user, amount)
    totals = oracle.totals()
    estimates = {user: sketches[partition_of_key(totals_key(board.id, user), list(range(partitions)))].estimate(user)
                 for user in totals}  # fmt: skip
    entries = [{"rank": rank, "userId": user, "score": estimate, "verified": True, "exactScore": totals[user]}
               for rank, (user, estimate) in enumerate(ranked(estimates, K), start=1)]  # fmt: skip
    return {"estimated": True, "errorBound": error_bound(EPSILON, sum(totals.values())), "entries": entries}


def _covers(as_of: dict[str, Any], acked: dict[tuple[str, int], int]) -> bool:
    at = {(p["region"], p["partition"]): p["offset"] for p in as_of["positions"]}
    return all(at.get(key, -1) >= offset for key, offset in acked.items())


def _plays(board: Board, items: range, tag: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(eu's, us's) plays of ``items``: item i is played 40 - i times, alternately through eu and us,
    every fifth play sent to both regions (one event, two copies)."""
    eu: list[dict[str, Any]] = []
    us: list[dict[str, Any]] = []
    for i in items:
        for n in range(40 - i):
            play = points(board.id, f"{tag}-{n}", f"song-{i:02d}", 1 + n % 3)
            (eu if (i + n) % 2 else us).append(play)
            if n % 5 == 0:
                (us if (i + n) % 2 else eu).append(play)
    return eu, us


async def test_both_regions_answer_the_same_estimates_verified_counts_and_bound(regions: Deployment) -> None:
    d, oracle = regions, Oracle()
    eu, us = d.regions["eu"], d.regions["us"]
    board = await _board(d)
    partitions = eu.settings.kafka.partitions
    first_eu, first_us = _plays(board, range(24), "a")
    await oracle.send_all(eu, first_eu)
    await oracle.send_all(us, first_us)

    d.cut("us")  # eu no longer reads us's awards; us still reads eu's
    try:
        cut_eu, cut_us = _plays(board, range(0, 24, 3), "b")
        await oracle.send_all(eu, cut_eu)
        await oracle.send_all(us, cut_us)
    finally:
        d.heal()
    assert oracle.acks > len(oracle.amounts) and {r for r, _ in oracle.acked} == {"eu", "us"}
    expected = _expected(board, oracle, partitions)
    found: dict[tuple[str, str], dict[str, Any]] = {}

    async def converged() -> bool:
        found.update(await _tops(d, board))
        return all(
            {k: v for k, v in page.items() if k != "asOf"} == expected and _covers(page["asOf"], oracle.acked)
            for page in found.values()
        )

    await Region.wait_until(converged, WITHIN_S, f"{board.id}'s top in both regions converged")
    regional = {name: found[(name, "REGIONAL")] for name in d.gateways}
    assert regional["eu"]["asOf"]["region"] == "eu" and regional["us"]["asOf"]["region"] == "us"
    assert regional["eu"]["entries"] == regional["us"]["entries"] == expected["entries"]


async def test_a_hidden_item_leaves_top_in_both_regions_and_returns_with_every_play(regions: Deployment) -> None:
    d, oracle = regions, Oracle()
    eu, us = d.regions["eu"], d.regions["us"]
    board = await _board(d)
    for region, item, plays in ((eu, "ann", 5), (us, "bob", 4), (eu, "cat", 3), (us, "dan", 2)):
        await oracle.send_all(region, [points(board.id, f"m{n}", item, 10) for n in range(plays)])

    async def everywhere(expect: list[tuple[str, int]], what: str) -> None:
        async def holds() -> bool:
            tops = await _tops(d, board)
            return all([(e["userId"], e["exactScore"]) for e in page["entries"]] == expect for page in tops.values())

        await Region.wait_until(holds, WITHIN_S, what)

    await everywhere([("ann", 50), ("bob", 40), ("cat", 30), ("dan", 20)], "every play read")
    await _data(d.gateways["eu"], HIDE, admin=True, b=board.id, u="bob")
    await everywhere([("ann", 50), ("cat", 30), ("dan", 20)], "bob hidden")
    await oracle.send_all(us, [points(board.id, "late", "bob", 30)])  # hidden, bob's plays keep counting
    await _data(d.gateways["eu"], RESTORE, admin=True, b=board.id, u="bob")
    await everywhere([("bob", 70), ("ann", 50), ("cat", 30), ("dan", 20)], "bob back with every play")
