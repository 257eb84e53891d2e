"""Two regions on Kafka clusters of their own, where time and place compose: the same award sent to
both (a game service failing over), and a replication hold longer than the dedupe horizon and its
margin. After the heal both regions rank identically, every acknowledged award counts exactly once,
and nothing acknowledged goes to reconciliation as forgotten."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from regions.core.boards import Board, SortOrder, TiePolicy
from regions.core.reads import AsOf, RankPage
from tests.harness import Region, points
from tests.multi_region import Deploy, Deployment

WITHIN_S = 90.0
# A dedupe memory of 2 s (+ 2 s of margin): the holds below last far longer.
SHORT_MEMORY = {"LB_PROCESSOR__DEDUPE_HORIZON_S": "2", "LB_PROCESSOR__DEDUPE_RETENTION_MARGIN_S": "2"}


async def _send(region: Region, board: str, user: str, match: str, amount: int) -> tuple[str, int, int]:
    payload = points(board, match, user, amount)
    for _ in range(5):
        try:
            response = await region.client.send(payload)
        except httpx.TransportError:
            continue  # unknown outcome: retried with the same award
        if response.status_code < 500:
            break
    assert response.status_code == 202, response.text
    [ack] = response.json()["accepted"]
    return ack["region"], ack["partition"], ack["offset"]


def _covers(as_of: AsOf, acked: list[tuple[str, int, int]]) -> bool:
    return all(as_of.positions.get((r, p), -1) >= o for r, p, o in acked)


async def _standings(d: Deployment, board: Board, region: str, acked: list[tuple[str, int, int]]) -> Any:
    page: RankPage = await d.readers[region].top(board, 20)
    if not _covers(page.as_of, acked):
        return None
    return [(e.rank, e.user_id, e.score) for e in page.entries]


async def _ranked_everywhere(
    d: Deployment, board: Board, acked: list[tuple[str, int, int]], expected: list[Any], what: str
) -> None:
    """Until every region's REGIONAL standings cover ``acked`` and equal ``expected``."""
    for region in d.regions:

        async def settled(region: str = region) -> bool:
            return await _standings(d, board, region, acked) == expected

        await Region.wait_until(settled, WITHIN_S, f"{region}: {what}")


async def _refused(region: Region, board: str) -> list[tuple[str, str, str, int]]:
    """(reason, user, accepting region, amount) of the board's awards in the region's reconciliation."""
    return sorted((r.reason, r.award.user_id, r.award.region, r.award.amount)
                  for r in await region.reconciliation() if r.award is not None and r.award.board_id == board)  # fmt: skip


@pytest.mark.timeout(300)
async def test_a_failover_retry_ranks_the_same_in_both_regions_after_the_heal(deploy: Deploy) -> None:
    """Replication held both ways: alice +10 (m1) to eu, bob +10 (m2) to eu a second later, alice's
    m1 again to us a second after that; carol +20 (m3) to eu and a conflicting +30 (m3) to us. After
    the heal both regions' REGIONAL projections (eu's is also the board's HOME) say carol 20, alice 10,
    bob 10 (alice reached 10 first: her earliest copy counts), and the conflicting copy is refused."""
    d = await deploy(["eu", "us"])
    eu, us = d.regions["eu"], d.regions["us"]
    board = Board("failover-board", "Failover", "eu", SortOrder.DESC, tie_policy=TiePolicy.FIRST_REACHED)
    await eu.create_board(board)
    d.cut("eu", "us")
    acked = [await _send(eu, board.id, "alice", "m1", 10)]
    await asyncio.sleep(1)
    acked.append(await _send(eu, board.id, "bob", "m2", 10))
    await asyncio.sleep(1)
    acked.append(await _send(us, board.id, "alice", "m1", 10))
    acked.append(await _send(eu, board.id, "carol", "m3", 20))
    await asyncio.sleep(0.1)
    acked.append(await _send(us, board.id, "carol", "m3", 30))
    await asyncio.sleep(3)  # each region projects its own copies first
    d.heal()
    expected = [(1, "carol", 20), (2, "alice", 10), (3, "bob", 10)]
    await _ranked_everywhere(d, board, acked, expected, "standings after the heal")
    await asyncio.sleep(2)  # and they stay so
    for region in ("eu", "us"):
        assert await _standings(d, board, region, acked) == expected
        assert await _refused(d.regions[region], board.id) == [("conflicting_repeat", "carol", "us", 30)]


@pytest.mark.timeout(400)
async def test_a_replication_hold_longer_than_the_dedupe_memory_loses_nothing(deploy: Deploy) -> None:
    """us -> eu and eu -> us replication held for 75 s, far beyond a dedupe horizon of 2 s and its
    margin of 2 s (the processors forget every few seconds of stream time meanwhile): every award
    accepted in us during the hold counts in eu (the board's home) once, retries included, and none
    goes to reconciliation."""
    d = await deploy(["eu", "us"], env=SHORT_MEMORY)
    eu, us = d.regions["eu"], d.regions["us"]
    board = Board("long-cut-board", "Long cut", "eu", SortOrder.DESC, tie_policy=TiePolicy.USER_ID)
    await eu.create_board(board)
    acked = [await _send(eu, board.id, "ann", "before", 1)]
    d.cut("eu", "us")
    acked += [await _send(us, board.id, "ben", f"during-{n}", 2) for n in range(5)]
    acked.append(await _send(us, board.id, "ben", "during-0", 2))  # a retry within us's horizon
    acked.append(await _send(eu, board.id, "ann", "during-eu", 3))
    await asyncio.sleep(75)
    acked.append(await _send(eu, board.id, "ann", "late-eu", 4))
    d.heal()
    expected = [(1, "ben", 10), (2, "ann", 8)]
    await _ranked_everywhere(d, board, acked, expected, "counting every award of the hold once")
    for region in (eu, us):
        assert await _refused(region, board.id) == []


@pytest.mark.timeout(300)
async def test_a_processor_outage_longer_than_the_dedupe_memory_loses_nothing(deploy: Deploy) -> None:
    """eu's processor is down for far longer than the horizon and its margin while both intakes
    accept awards, some of them retried in the other region: once it is back its backlog (its own
    awards and us's replicated ones, read long after their acceptance) counts every award once."""
    d = await deploy(["eu", "us"], env=SHORT_MEMORY)
    eu, us = d.regions["eu"], d.regions["us"]
    board = Board("outage-board", "Outage", "eu", SortOrder.DESC, tie_policy=TiePolicy.USER_ID)
    await eu.create_board(board)
    acked = [await _send(eu, board.id, "ann", "before", 1)]
    await eu.kill("processor")
    for n in range(4):
        acked.append(await _send(eu, board.id, "ann", f"down-{n}", 2))
        acked.append(await _send(us, board.id, "ann", f"down-{n}", 2))  # the same award, retried in us
        acked.append(await _send(us, board.id, "ben", f"down-{n}", 5))
    await asyncio.sleep(15)  # the backlog ages past horizon + margin in both streams
    await eu.start("processor")
    expected = [(1, "ben", 20), (2, "ann", 9)]
    await _ranked_everywhere(d, board, acked, expected, "counting the backlog once")
    for region in (eu, us):
        assert await _refused(region, board.id) == []
