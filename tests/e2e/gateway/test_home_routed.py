"""End to end on two whole regions (``tests.multi_region``: eu and us, each on a Kafka cluster and a
Redis of its own, with processor, projector, intake, a gateway and a replicator from the other):
HOME_ROUTED boards homed in eu, their awards sent to us's intake.

us's intake produces them into eu's awards topic (through the proxied listener the other region's
clients use) and answers 202 with region eu once eu acknowledged; a HOME read through us's gateway
whose asOf covers that position shows the award (read-your-write). With eu cut off, us answers 503
``home_unavailable`` for such a board within ``intake.home_delivery_timeout_s`` (2 s here) while it
keeps accepting REGIONAL boards' awards itself, and a HOME_ROUTED award is never accepted in us's own
awards topic. Every wait is for a condition (asOf covering a position, the regions converged).
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from aiokafka import ConsumerRecord, TopicPartition

from regions.core.boards import Board, Consistency
from regions.stores.kafka.clients import replay
from schema.records import Codec
from tests.e2e.gateway.two_regions import module_regions
from tests.harness import Region, points
from tests.multi_region import Deployment, Oracle

WITHIN_S = 60.0  # every region converges within it (replication included)
DELIVERY_TIMEOUT_S = 2  # intake.home_delivery_timeout_s of these regions
TOP = """query($b: ID!) { leaderboard(id: $b) { consistency
  top(k: 10, scope: HOME) { entries { userId score } asOf { region positions { region partition offset } } } } }"""


regions = module_regions(
    "home-routed", services=("processor", "projector", "intake"),
    env={"LB_INTAKE__HOME_DELIVERY_TIMEOUT_S": str(DELIVERY_TIMEOUT_S)},
)  # fmt: skip


async def _board(d: Deployment, consistency: Consistency) -> Board:
    board = Board(f"routed-{uuid.uuid4().hex[:10]}", "Home routed", "eu", consistency=consistency)
    await d.regions["eu"].create_board(board)  # the catalog is global: us's intake resolves it too
    return board


async def _home_top(d: Deployment, board: Board) -> dict[str, Any]:
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(d.gateways["us"].url, json={"query": TOP, "variables": {"b": board.id}})
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    return body["data"]["leaderboard"]  # type: ignore[no-any-return]


def _covers(read: dict[str, Any], accepted: dict[str, Any]) -> bool:
    at = {(p["region"], p["partition"]): p["offset"] for p in read["top"]["asOf"]["positions"]}
    return at.get((accepted["region"], accepted["partition"]), -1) >= accepted["offset"]


async def _accepted_in(region: Region, board: Board) -> list[str]:
    """Event ids of ``board``'s awards in ``region``'s own awards topic (those it accepted itself)."""
    codec, found = Codec(), []
    topic = region.settings.kafka.topic("awards")

    async def keep(records: list[ConsumerRecord]) -> None:
        for r in records:
            if r.key is not None and not r.key.startswith(b"\x00"):  # heartbeats and markers are not awards
                award = codec.award(r.value)
                if award.board_id == board.id:
                    found.append(award.event_id)

    await replay(region.settings.kafka, [TopicPartition(topic, p) for p in range(region.settings.kafka.partitions)],
                 keep)  # fmt: skip
    return found


async def test_an_award_sent_to_us_is_acknowledged_by_eu_and_read_back_through_us_at_once(
    regions: Deployment,
) -> None:
    d, oracle = regions, Oracle()
    us = d.regions["us"]
    board = await _board(d, Consistency.HOME_ROUTED)
    response = await us.client.send(points(board.id, "m1", "ann", 12))
    assert response.status_code == 202, response.text
    [accepted] = response.json()["accepted"]
    assert accepted["region"] == "eu"
    oracle.amounts[accepted["eventId"]] = ("ann", 12)
    oracle.acked[("eu", accepted["partition"])] = accepted["offset"]

    reads: list[dict[str, Any]] = []

    async def covered() -> bool:
        reads.append(await _home_top(d, board))
        return _covers(reads[-1], accepted)

    await Region.wait_until(covered, WITHIN_S, "a HOME read from us covering the acknowledged award")
    read = reads[-1]
    assert read["consistency"] == "HOME_ROUTED" and read["top"]["asOf"]["region"] == "eu"
    assert read["top"]["entries"] == [{"userId": "ann", "score": 12}]
    # Every read covering it shows it, also those before the wait ended: none covered it and lacked it.
    assert all(r["top"]["entries"] == [{"userId": "ann", "score": 12}] for r in reads if _covers(r, accepted))
    await Region.wait_until(lambda: d.converged(board.id, oracle), WITHIN_S, f"{board.id} converged")
    assert await _accepted_in(us, board) == []  # us produced it to eu, never into its own topic


async def test_with_eu_cut_off_us_refuses_home_routed_awards_and_keeps_accepting_regional_ones(
    regions: Deployment,
) -> None:
    d, routed_acks, regional_acks = regions, Oracle(), Oracle()
    eu, us = d.regions["eu"], d.regions["us"]
    routed, regional = await _board(d, Consistency.HOME_ROUTED), await _board(d, Consistency.REGIONAL)
    d.cut("eu")
    try:
        refused = await us.client.send(points(routed.id, "m1", "bob", 5))
        local = await us.client.send(points(regional.id, "m1", "bob", 7))
    finally:
        d.heal()
    assert refused.status_code == 503, refused.text
    error = refused.json()["error"]
    assert error["code"] == "home_unavailable" and "eu" in error["message"]
    assert error["fields"] == [{"field": "leaderboardId", "rule": "is HOME_ROUTED to eu, which is unreachable now"}]
    assert int(refused.headers["Retry-After"]) >= 1
    assert local.status_code == 202, local.text
    assert [a["region"] for a in local.json()["accepted"]] == ["us"]
    await regional_acks.send(us, regional.id, "bob", "m1", 7)  # the same award again: counted once

    # Healed, the same award is taken by eu (retried while us's link to eu recovers), once; us never
    # accepted it itself.
    await routed_acks.send(us, routed.id, "bob", "m1", 5)
    assert {region for region, _ in routed_acks.acked} == {"eu"}
    assert {region for region, _ in regional_acks.acked} == {"us"}
    for board, acks in ((routed, routed_acks), (regional, regional_acks)):
        await Region.wait_until(lambda b=board, a=acks: d.converged(b.id, a), WITHIN_S, f"{board.id} converged")
    assert await eu.total_of(routed.id, "bob") == await us.total_of(routed.id, "bob") == 5
    assert await eu.total_of(regional.id, "bob") == 7
    assert await _accepted_in(us, routed) == []
    assert len(await _accepted_in(us, regional)) == 2  # the REGIONAL board's award and its repeat, in us
