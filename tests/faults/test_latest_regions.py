"""Two regions on a LATEST board: the award that happened last holds the score in both, whatever
each region read first (``tests.multi_region``: real Kafka clusters of their own, replicators
through proxies that a test black-holes).

One award is sent to both regions (a retry in another region) before a cut; during the cut eu
takes a newer award and us an older one; after the heal us reads eu's newer award and eu reads us's
older one, later than its own newer: both converge on the newer score, and every acknowledged
position is covered."""

from __future__ import annotations

import pytest

from regions.core.boards import Aggregation, Board, SortOrder, TiePolicy
from tests.harness import Region
from tests.multi_region import Deploy, Deployment, Oracle, problems

WITHIN_S = 60.0


async def _send(oracle: Oracle, region: Region, board: str, match: str, score: int, occurred_at: str) -> None:
    """A score award; its position is recorded in the oracle (the totals are checked apart)."""
    payload = {"leaderboardId": board, "matchId": match, "userId": "alice", "awardType": "rating",
               "score": score, "occurredAt": occurred_at}  # fmt: skip
    response = await region.client.send(payload)
    assert response.status_code == 202, response.text
    for ack in response.json()["accepted"]:
        key = (ack["region"], ack["partition"])
        oracle.acked[key] = max(oracle.acked.get(key, -1), ack["offset"])


async def _holds(d: Deployment, board: str, oracle: Oracle, score: int) -> bool:
    """Every region covers every acknowledged position and holds ``score`` for alice."""
    for region in d.regions.values():
        if await problems(region, board, oracle) or await region.total_of(board, "alice") != score:
            return False
    return True


@pytest.mark.timeout(600)
async def test_both_regions_converge_on_the_latest_award_whichever_arrives_last(deploy: Deploy) -> None:
    d = await deploy(["eu", "us"])
    eu, us = d.regions["eu"], d.regions["us"]
    board = Board(
        "latest-regions", "Latest", "eu", SortOrder.DESC, Aggregation.LATEST, TiePolicy.FIRST_REACHED
    )
    await eu.create_board(board)
    oracle = Oracle()

    for region in (eu, us):  # one award acknowledged by both regions
        await _send(oracle, region, board.id, "m1", 50, "2026-01-01T10:00:00Z")
    await Region.wait_until(lambda: _holds(d, board.id, oracle, 50), WITHIN_S, "50 in both regions")

    d.cut("eu", "us")
    await _send(oracle, eu, board.id, "m3", 70, "2026-01-01T12:00:00Z")  # the newest
    await _send(oracle, us, board.id, "m2", 90, "2026-01-01T11:00:00Z")  # newer than m1, older than m3
    await eu.wait_for_total(board.id, "alice", 70, WITHIN_S)
    await us.wait_for_total(board.id, "alice", 90, WITHIN_S)

    d.heal()  # us reads the newer m3; eu reads the older m2 after its own m3
    await Region.wait_until(lambda: _holds(d, board.id, oracle, 70), WITHIN_S, "70 in both regions")
    assert not [r for region in d.regions.values() for r in await region.reconciliation()]
