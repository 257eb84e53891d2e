"""End to end on two whole regions (``tests.multi_region``: eu and us, each with its processor,
projector, intake, lifecycle worker and gateway, and a replicator from the other): a moderator hides
a player on a board homed in eu, every read of both regions leaves the player out (ranks close up),
their awards keep counting while hidden (one accepted in us), a processor restored from its
changelog keeps them hidden, and a restore shows them again with every award applied meanwhile.

The regions are started once for the module; every wait is for a condition (reads that show it).
"""

from __future__ import annotations

import shutil
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx

from regions.core.boards import Board
from regions.core.periods import Period, WindowSpec
from regions.core.windows import encode_window
from tests.e2e.gateway.conftest import GatewayProcess
from tests.e2e.gateway.two_regions import module_regions
from tests.harness import Region, points
from tests.multi_region import Deployment, Oracle

WITHIN_S = 60.0
ADMIN = {"Authorization": "Bearer dev-admin-token"}
SCOPES = ("HOME", "REGIONAL")
READS = """query($b: ID!, $scope: Scope, $u: ID!, $n: ID!) { leaderboard(id: $b) {
  top(k: 10, scope: $scope) { entries { rank userId score } }
  player(userId: $u, scope: $scope) { rank score }
  players(userIds: [$u, $n], scope: $scope) { entries { userId rankAmong player { rank } } }
  context(userId: $n, range: 1, scope: $scope) { above { userId } player { rank } below { userId } }
  entries(first: 10, scope: $scope) { totalCount entries { userId } }
  playerCount(scope: $scope) } }"""
PERIOD = """query($b: ID!, $scope: Scope) { leaderboard(id: $b) {
  period { top(k: 10, scope: $scope) { entries { userId } } } } }"""
HIDE = """mutation($b: ID!, $u: ID!, $r: String!) { hidePlayer(leaderboardId: $b, userId: $u, reason: $r) {
  leaderboardId userId action reason at sequence } }"""
RESTORE = """mutation($b: ID!, $u: ID!, $r: String!) { restorePlayer(leaderboardId: $b, userId: $u, reason: $r) {
  userId action sequence } }"""
RESULT = """query($b: ID!) { leaderboard(id: $b) { status result { version entries { rank userId } } } }"""
LOG = """query($b: ID!, $first: Int, $after: String) { moderation(leaderboardId: $b, first: $first, after: $after) {
  userId action reason sequence } }"""


# eu and us with what moderation needs (the home lifecycle worker writes the actions), a gateway each.
regions = module_regions("moderation-two-regions", services=("processor", "projector", "intake", "lifecycle"),
                         env={"LB_LIFECYCLE__POLL_INTERVAL_S": "0.2", "LB_LIFECYCLE__MARKER_DELAY_S": "0"})


async def _gql(gateway: GatewayProcess, query: str, admin: bool = True, **variables: Any) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(gateway.url, json={"query": query, "variables": variables},
                                   headers=ADMIN if admin else {})  # fmt: skip
    return response.json()  # type: ignore[no-any-return]


async def _data(gateway: GatewayProcess, query: str, **variables: Any) -> dict[str, Any]:
    body = await _gql(gateway, query, **variables)
    assert "errors" not in body, body
    return body["data"]  # type: ignore[no-any-return]


async def _everywhere(
    d: Deployment, board: Board, expect: Any, what: str, query: str = READS, **variables: Any
) -> None:
    """Until every read of every gateway, in both scopes, satisfies ``expect`` (a predicate on its data)."""
    for gateway in d.gateways.values():
        for scope in SCOPES:
            async def holds(gateway: GatewayProcess = gateway, scope: str = scope) -> bool:
                read = (await _data(gateway, query, b=board.id, scope=scope, **variables))["leaderboard"]
                return bool(expect(read))

            await Region.wait_until(holds, WITHIN_S, f"{what} ({scope} through {gateway.url})")


def _tops(read: dict[str, Any]) -> list[tuple[int, str, int]]:
    return [(e["rank"], e["userId"], e["score"]) for e in read["top"]["entries"]]


def _without_bob(read: dict[str, Any]) -> bool:
    listed = {e["userId"]: e for e in read["players"]["entries"]}
    return (
        _tops(read) == [(1, "ann", 50), (2, "cat", 30), (3, "dan", 20)]
        and read["player"] is None
        and listed["bob"]["rankAmong"] is None and listed["bob"]["player"] is None
        and listed["dan"]["rankAmong"] == 1 and listed["dan"]["player"] == {"rank": 3}
        and [e["userId"] for e in read["context"]["above"]] == ["cat"] and read["context"]["below"] == []
        and read["entries"]["totalCount"] == 3 and read["playerCount"] == 3
    )


async def test_a_hidden_player_leaves_every_read_of_both_regions_and_returns_with_their_awards(
    regions: Deployment,
) -> None:
    d, oracle = regions, Oracle()
    board = Board(f"mod-{uuid.uuid4().hex[:10]}", "Moderated", "eu")
    await d.regions["eu"].create_board(board)
    eu, us = d.regions["eu"], d.regions["us"]
    for region, user, amount in ((eu, "ann", 50), (us, "bob", 40), (eu, "cat", 30), (us, "dan", 20)):
        await oracle.send(region, board.id, user, f"m-{user}", amount)
    await _everywhere(d, board, lambda r: len(_tops(r)) == 4, "every award read", u="bob", n="dan")

    hidden = (await _data(d.gateways["eu"], HIDE, b=board.id, u="bob", r="boosting"))["hidePlayer"]
    again = (await _data(d.gateways["eu"], HIDE, b=board.id, u="bob", r="twice"))["hidePlayer"]

    assert (hidden["action"], hidden["sequence"], hidden["reason"]) == ("HIDE", 1, "boosting")
    assert again == hidden  # what the player already is: the last action answers
    await _everywhere(d, board, _without_bob, "bob hidden", u="bob", n="dan")

    # Hidden, bob's awards keep counting: one accepted in us, after us's processor lost its disk and
    # came back from its changelog (which holds the action).
    await us.stop("processor")
    shutil.rmtree(us.settings.processor.store_dir)
    await us.start("processor")
    await oracle.send(us, board.id, "bob", "m-late", 100)
    await Region.wait_until(lambda: _covered(d, oracle), WITHIN_S, "the late award projected")
    await _everywhere(d, board, _without_bob, "bob still hidden", u="bob", n="dan")

    shown = (await _data(d.gateways["eu"], RESTORE, b=board.id, u="bob", r="appeal upheld"))["restorePlayer"]

    assert (shown["action"], shown["sequence"]) == ("RESTORE", 2)
    await _everywhere(d, board, lambda r: _tops(r)[0] == (1, "bob", 140) and r["playerCount"] == 4,
                      "bob back with every award", u="bob", n="dan")  # fmt: skip
    log = (await _data(d.gateways["eu"], LOG, b=board.id, first=1, after="1"))["moderation"]
    assert log == [{"userId": "bob", "action": "RESTORE", "reason": "appeal upheld", "sequence": 2}]


async def test_hiding_on_a_sharded_board_and_on_a_board_with_periods(regions: Deployment) -> None:
    d = regions
    sharded = Board(f"mod-s-{uuid.uuid4().hex[:8]}", "Sharded", "eu", shards=4)
    daily = Board(f"mod-d-{uuid.uuid4().hex[:8]}", "Daily", "eu", window=encode_window(WindowSpec(Period.DAILY)))
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    for board in (sharded, daily):
        await d.regions["eu"].create_board(board)
        for i, user in enumerate(("ann", "bob", "cat", "dan")):
            award = {**points(board.id, f"m-{user}", user, 50 - 10 * i), "occurredAt": now}
            response = await d.regions["eu" if i % 2 else "us"].client.send(award)
            assert response.status_code == 202, response.text
    await _everywhere(d, sharded, lambda r: len(_tops(r)) == 4, "sharded board read", u="bob", n="dan")
    await _everywhere(d, daily, lambda r: len(r["period"]["top"]["entries"]) == 4, "daily board read", PERIOD)

    for board in (sharded, daily):
        await _data(d.gateways["eu"], HIDE, b=board.id, u="bob", r="cheating")

    await _everywhere(d, sharded, _without_bob, "bob hidden on the sharded board", u="bob", n="dan")
    await _everywhere(d, daily, lambda r: [e["userId"] for e in r["period"]["top"]["entries"]] == ["ann", "cat", "dan"],
                      "bob hidden in the current period", PERIOD)  # fmt: skip


async def test_hiding_on_a_closed_board_publishes_the_next_result_version_without_the_player(
    regions: Deployment,
) -> None:
    d, oracle = regions, Oracle()
    board = Board(f"mod-c-{uuid.uuid4().hex[:8]}", "Closed", "eu")
    await d.regions["eu"].create_board(board)
    for region, user, amount in ((d.regions["eu"], "ann", 50), (d.regions["us"], "bob", 40), (d.regions["eu"], "cat", 30)):
        await oracle.send(region, board.id, user, f"m-{user}", amount)
    await Region.wait_until(lambda: _covered(d, oracle), WITHIN_S, "every award projected")
    await _data(d.gateways["eu"], """mutation($b: ID!) { closeLeaderboard(id: $b) { status } }""", b=board.id)

    async def result() -> dict[str, Any] | None:
        read = (await _data(d.gateways["us"], RESULT, b=board.id))["leaderboard"]
        return read["result"] if read["status"] == "CLOSED" else None

    await Region.wait_until(lambda: _is_version(result, 1), WITHIN_S, "the board CLOSED")

    await _data(d.gateways["eu"], HIDE, b=board.id, u="bob", r="cheated in the final")

    await Region.wait_until(lambda: _is_version(result, 2), WITHIN_S, "result version 2")
    published = await result()
    assert published is not None
    assert [(e["rank"], e["userId"]) for e in published["entries"]] == [(1, "ann"), (2, "cat")]
    await _data(d.gateways["eu"], RESTORE, b=board.id, u="bob", r="appeal upheld")
    await Region.wait_until(lambda: _is_version(result, 3), WITHIN_S, "result version 3")
    published = await result()
    assert published is not None
    assert [(e["rank"], e["userId"]) for e in published["entries"]] == [(1, "ann"), (2, "bob"), (3, "cat")]


async def _is_version(result: Any, version: int) -> bool:
    read = await result()
    return read is not None and read["version"] == version


async def test_moderation_is_refused_with_the_field_and_the_rule(regions: Deployment) -> None:
    d = regions
    board = Board(f"mod-r-{uuid.uuid4().hex[:8]}", "Refusals", "eu")
    await d.regions["eu"].create_board(board)

    def refusal(body: dict[str, Any]) -> tuple[str, str]:
        [error] = body["errors"]
        return error["extensions"]["code"], error["message"]

    code, message = refusal(await _gql(d.gateways["us"], HIDE, b=board.id, u="bob", r="x"))
    assert code == "BAD_USER_INPUT" and "home region 'eu'" in message and message.startswith("leaderboardId")
    code, message = refusal(await _gql(d.gateways["eu"], RESTORE, b=board.id, u="bob", r="x"))
    assert code == "BAD_USER_INPUT" and message.startswith("userId:") and "never hidden" in message
    code, message = refusal(await _gql(d.gateways["eu"], HIDE, b=board.id, u="bob", r=""))
    assert code == "BAD_USER_INPUT" and message.startswith("reason:")
    code, _ = refusal(await _gql(d.gateways["eu"], HIDE, b="mod-none", u="bob", r="x"))
    assert code == "NOT_FOUND"
    code, _ = refusal(await _gql(d.gateways["eu"], HIDE, admin=False, b=board.id, u="bob", r="x"))
    assert code == "UNAUTHORIZED"
    code, message = refusal(await _gql(d.gateways["eu"], LOG, b=board.id, first=500))
    assert code == "LIMIT_EXCEEDED" and message.startswith("first:")
    assert (await _data(d.gateways["eu"], LOG, b=board.id))["moderation"] == []


async def _covered(d: Deployment, oracle: Oracle) -> bool:
    """Every region's projection positions cover every acknowledged award."""
    for region in d.regions.values():
        offsets = (await region.projection.positions()).offsets
        if any(offsets.get(key, -1) < offset for key, offset in oracle.acked.items()):
            return False
    return True
