"""End to end on two regions (eu home, us replicating): a DAILY board whose previous day is CLOSED;
hiding a player through the gateway publishes that day's result version 2 without them, restoring
them version 3 with them again, read through both gateways' period reads and archived results.

Every service keeps a grace of two days (so yesterday's awards are taken); the lifecycle workers run
two days ahead, so eu's closes yesterday at once, while the gateways keep the real clock.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime
from typing import Any

from regions.core.boards import Board
from regions.core.periods import Period, WindowSpec, period_of, previous_period
from regions.core.windows import encode_window
from tests.e2e.gateway.test_moderation_two_regions import HIDE, RESTORE, _data
from tests.e2e.gateway.two_regions import module_regions
from tests.harness import Region, points
from tests.multi_region import Deployment

WITHIN_S = 60.0
GRACE_S = 2 * 86_400
DAILY = WindowSpec(Period.DAILY)
PERIOD = """query($b: ID!, $key: String, $scope: Scope) { leaderboard(id: $b) {
  period(key: $key) { key status top(scope: $scope) { entries { userId } }
    result { version entries { rank userId score } } } } }"""

regions = module_regions("moderation-closed-period", services=("processor", "projector", "intake", "lifecycle"),
                         env={"LB_LIFECYCLE__POLL_INTERVAL_S": "0.2", "LB_LIFECYCLE__MARKER_DELAY_S": "0",
                              "LB_WINDOWS__GRACE_S": str(GRACE_S)})  # fmt: skip


async def _read(d: Deployment, region: str, board: Board, key: str, scope: str = "HOME") -> dict[str, Any]:
    data = await _data(d.gateways[region], PERIOD, b=board.id, key=key, scope=scope)
    return data["leaderboard"]["period"]  # type: ignore[no-any-return]


async def _version_everywhere(d: Deployment, board: Board, key: str, version: int) -> None:
    for region in d.gateways:

        async def published(region: str = region) -> bool:
            read = await _read(d, region, board, key)
            return read["status"] == "CLOSED" and (read["result"] or {}).get("version") == version

        await Region.wait_until(published, WITHIN_S, f"{key} version {version} through {region}")


async def test_hiding_and_restoring_republish_the_closed_previous_day(regions: Deployment) -> None:
    d = regions
    now = int(time.time() * 1000)
    yesterday = previous_period(DAILY, period_of(DAILY, now))
    board = Board(f"mod-p-{uuid.uuid4().hex[:8]}", "Daily", "eu", window=encode_window(DAILY))
    await d.regions["eu"].create_board(board)
    at = datetime.fromtimestamp((yesterday.end_ms - 60_000) / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    for region, user, amount in (("eu", "ann", 50), ("us", "bob", 40), ("eu", "cat", 30)):
        response = await d.regions[region].client.send(
            {**points(board.id, f"m-{user}", user, amount), "occurredAt": at}
        )
        assert response.status_code == 202, response.text
    eu = d.regions["eu"]
    await eu.wait_for_total(f"{board.id}@{yesterday.key}", "bob", 40, within=WITHIN_S)
    for region in d.regions.values():  # (each writes its cutoff markers once the close began on its clock)
        await region.stop("lifecycle")
        await region.start("lifecycle", overrides={"LB_WINDOWS__CLOCK_OFFSET_S": str(GRACE_S + 60)})
    await _version_everywhere(d, board, yesterday.key, 1)

    await _data(d.gateways["eu"], HIDE, b=board.id, u="bob", r="cheated yesterday")

    await _version_everywhere(d, board, yesterday.key, 2)
    for region in d.gateways:
        read = await _read(d, region, board, yesterday.key)
        assert [(e["rank"], e["userId"]) for e in read["result"]["entries"]] == [(1, "ann"), (2, "cat")]
        assert [e["userId"] for e in read["top"]["entries"]] == ["ann", "cat"]
    first = await _data(
        d.gateways["us"],
        """query($b: ID!, $key: String) { leaderboard(id: $b) {
      period(key: $key) { result(version: 1) { version entries { userId } } } } }""",
        b=board.id,
        key=yesterday.key,
    )
    assert [e["userId"] for e in first["leaderboard"]["period"]["result"]["entries"]] == ["ann", "bob", "cat"]

    await _data(d.gateways["eu"], RESTORE, b=board.id, u="bob", r="appeal upheld")

    await _version_everywhere(d, board, yesterday.key, 3)
    read = await _read(d, "us", board, yesterday.key, "REGIONAL")
    assert [(e["rank"], e["userId"], e["score"]) for e in read["result"]["entries"]] == [
        (1, "ann", 50), (2, "bob", 40), (3, "cat", 30)]  # fmt: skip
    assert [e["userId"] for e in read["top"]["entries"]] == ["ann", "bob", "cat"]
