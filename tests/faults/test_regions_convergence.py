"""Regions on real Kafka clusters of their own, each with all its processes and a replicator from
every other region, cut off from each other at the network level and healed (``tests.multi_region``:
every link between regions goes through a proxy that a test black-holes, a silent partition).

After the heal every region's totals equal the oracle folded from the 202-acknowledged awards (none
lost, none counted twice), every acknowledged position is covered, and the home region's audit holds
exactly one row per distinct award. Negative controls show the checks failing: with dedupe off the
convergence check names the doubled total; records deleted before replication show as a gap."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from cassandra.cluster import Session
from websockets.asyncio.client import ClientConnection, connect

from regions.core.boards import Board, SortOrder, TiePolicy
from regions.core.reads import AsOf
from tests.clusters import Replicators, delete_before, send_awards
from tests.e2e.gateway.conftest import GatewayProcess
from tests.harness import Region
from tests.integration.gateway.test_subscriptions import TRANSPORT_WS
from tests.multi_region import STALE_AFTER_S, Deploy, Deployment, Oracle, audited, problems, status

HEAL_WITHIN_S = 60.0  # stated bound: after the heal, every region equals the oracle within it
USERS = [f"player-{i}" for i in range(6)]
TOP = """query($id: ID!, $scope: Scope!) { leaderboard(id: $id) { top(k: 20, scope: $scope) {
  entries { userId score } asOf { region regions { region stale } } } } }"""
UPDATES = """subscription($board: ID!, $user: ID) {
  leaderboardUpdates(leaderboardId: $board, userId: $user, scope: HOME) {
    __typename ... on ScoreUpdated { score asOf { region } } ... on Resync { reason } } }"""


@contextlib.asynccontextmanager
async def _subscribed(gateway: GatewayProcess, board: str, user: str) -> AsyncIterator[ClientConnection]:
    """A HOME subscription to ``user``'s updates on ``board`` (graphql-transport-ws)."""
    async with connect(gateway.ws_url, subprotocols=[TRANSPORT_WS]) as ws:
        await ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        variables = {"board": board, "user": user}
        await ws.send(
            json.dumps(
                {"id": "1", "type": "subscribe", "payload": {"query": UPDATES, "variables": variables}}
            )
        )
        yield ws


async def _next(ws: ClientConnection) -> dict[str, Any]:
    """The subscription's next message; 30 s at most: a gateway that hung on a silent link fails here."""
    message: dict[str, Any] = json.loads(await asyncio.wait_for(ws.recv(), 30))
    return message


async def _top(gateway: GatewayProcess, board: str, scope: str) -> dict[str, Any]:
    """A top-K read through the gateway. The client waits up to 30 s: a gateway that hung on a silent
    link would fail the test here."""
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.post(
            gateway.url, json={"query": TOP, "variables": {"id": board, "scope": scope}}
        )
    answer: dict[str, Any] = response.json()
    return answer


def _scores(answer: dict[str, Any]) -> dict[str, int]:
    return {e["userId"]: e["score"] for e in answer["data"]["leaderboard"]["top"]["entries"]}


async def _ready(url: str) -> bool:
    async with httpx.AsyncClient(timeout=10) as http:
        return (await http.get(url + "/readyz")).status_code == 200


async def _left_to_home(audit_url: str, awards: int) -> bool:
    """The region's audit sink has left at least ``awards`` awards to their home region's sink."""
    return await _metric(audit_url, "lb_audit_left_to_home_total") >= awards


async def _metric(url: str, name: str) -> float:
    async with httpx.AsyncClient(timeout=10) as http:
        text = (await http.get(url + "/metrics")).text
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(name))


async def _replicators_say(d: Deployment, reachable: float) -> tuple[bool, list[float]]:
    """Whether every replicator says its source region is (1) or is not (0) reachable, and the lag
    in seconds of every replicator's partitions."""
    said, lags = True, []
    for replicator in d.replicators.values():
        samples = await replicator.metrics()
        said &= samples[f'lb_replicator_source_reachable{{source="{replicator.source}"}}'] == reachable
        lags += [v for k, v in samples.items() if k.startswith("lb_replicator_lag_seconds{")]
    return said, lags


async def _silent_sources_reported(d: Deployment) -> bool:
    """Every replicator says its source does not answer, and its lag grows: never caught up."""
    unreachable, lags = await _replicators_say(d, 0)
    return unreachable and min(lags) > 3


async def _sources_back(d: Deployment) -> bool:
    reachable, lags = await _replicators_say(d, 1)
    return reachable and max(lags) < STALE_AFTER_S


def _covers(as_of: AsOf, acked: dict[tuple[str, int], int], region: str) -> bool:
    """``as_of`` reflects every award ``region`` acknowledged up to ``acked``."""
    return all(as_of.positions.get(k, -1) >= o for k, o in acked.items() if k[0] == region)


@pytest.mark.timeout(600)
async def test_two_regions_cut_off_from_each_other_keep_serving_and_converge_after_the_heal(
    deploy: Deploy, cassandra_session: Session
) -> None:
    """Both directions are cut while awards flow into both intakes (some sent to both). During the
    cut: REGIONAL stays fresh in each region; every asOf read from ``STALE_AFTER_S`` after the cut
    on says the other region is stale; a HOME read from ``us`` of the board homed in ``eu`` answers
    HOME_UNAVAILABLE (the gateway's own bound is 1 s, enforced by its timer, which
    tests/unit/gateway/test_home_reads.py shows ending a read that hangs; here the client's 30 s
    limit proves only that the read does not hang, since a busy machine may add seconds to any answer); HOME (eu) lacks us's awards of the cut and
    the oracle check says so; the replicators say their sources do not answer and their lag grows,
    and they and the gateway stay ready. After the heal, within
    ``HEAL_WITHIN_S``, every region equals the oracle and the audit holds one row per award."""
    d = await deploy(["eu", "us"], gateways_in=["us"])
    eu, us, gateway = d.regions["eu"], d.regions["us"], d.gateways["us"]
    board = Board("regions-board", "Regions", "eu", SortOrder.DESC, tie_policy=TiePolicy.USER_ID)
    await eu.create_board(board)
    oracle = Oracle()

    await d.flow(oracle, board.id, 40, USERS)  # the catalog is global: us's intake resolves the board
    await Region.wait_until(
        lambda: d.converged(board.id, oracle), HEAL_WITHIN_S, "convergence before the cut"
    )
    assert oracle.acks > len(oracle.amounts)  # some awards were acknowledged by both regions
    home = await _top(gateway, board.id, "HOME")  # through the link that is about to be cut
    assert home["data"]["leaderboard"]["top"]["asOf"]["region"] == "eu", home
    assert _scores(home) == oracle.totals()

    cut_at = d.cut("eu", "us")
    await d.flow(oracle, board.id, 10, USERS)  # awards of the cut in both regions
    during = dict(oracle.acked)
    cut_over = asyncio.Event()
    flowing = asyncio.create_task(_flow_until(d, oracle, board.id, cut_over))
    late_reads = 0

    async def cut_seen() -> bool:
        """Each region's REGIONAL projection has its own awards of the cut and says its own region
        is fresh; any read begun ``STALE_AFTER_S`` after the cut says the other region is stale."""
        nonlocal late_reads
        begun = time.time()
        eu_as_of, us_as_of = await d.readers["eu"].as_of(), await d.readers["us"].as_of()
        if begun > cut_at + STALE_AFTER_S + 0.01:
            late_reads += 1
            assert status(eu_as_of, "us").stale, eu_as_of.regions
            assert status(us_as_of, "eu").stale, us_as_of.regions
        fresh = not status(eu_as_of, "eu").stale and not status(us_as_of, "us").stale
        regional = _covers(eu_as_of, during, "eu") and _covers(us_as_of, during, "us")
        return late_reads > 0 and fresh and regional

    await Region.wait_until(cut_seen, 60, "REGIONAL fresh in both regions, each other region stale")
    home = await _top(gateway, board.id, "HOME")
    assert {e["extensions"]["code"] for e in home["errors"]} == {"HOME_UNAVAILABLE"}, home
    async with _subscribed(gateway, board.id, USERS[0]) as ws:
        refused = await _next(ws)
    assert refused["payload"]["errors"][0]["extensions"]["code"] == "HOME_UNAVAILABLE", refused

    async def regional_fresh() -> bool:
        """us's gateway answers REGIONAL, saying eu is stale (every answer this late) and, once its
        own heartbeats are projected, us fresh."""
        answer = await _top(gateway, board.id, "REGIONAL")
        regions = {s["region"]: s["stale"] for s in answer["data"]["leaderboard"]["top"]["asOf"]["regions"]}
        assert regions.keys() == {"eu", "us"} and regions["eu"], answer
        return not regions["us"]

    await Region.wait_until(regional_fresh, 60, "us's REGIONAL answer saying us is fresh")
    # HOME (eu's projection) lacks us's awards of the cut, and the oracle check names them.
    eu_lacks, us_lacks = await problems(eu, board.id, oracle), await problems(us, board.id, oracle)
    assert any("asOf ('us'," in p for p in eu_lacks) and any("the oracle" in p for p in eu_lacks), eu_lacks
    assert any("asOf ('eu'," in p for p in us_lacks), us_lacks
    await Region.wait_until(
        lambda: _silent_sources_reported(d), 60, "replicators reporting their sources silent"
    )
    for url in [r.url for r in d.replicators.values()] + [gateway.base]:
        assert await _ready(url), (
            f"{url} is not ready during the cut: readiness never waits for another region"
        )
    assert not flowing.done()

    cut_over.set()
    await flowing
    d.heal()
    await Region.wait_until(
        lambda: d.converged(board.id, oracle), HEAL_WITHIN_S, "convergence after the heal"
    )

    async def all_fresh() -> bool:
        as_ofs = [await reader.as_of() for reader in d.readers.values()]
        return all(not (s.stale or s.gap) for a in as_ofs for s in a.regions)

    await Region.wait_until(all_fresh, HEAL_WITHIN_S, "every region fresh in every asOf")

    async def home_answers() -> bool:
        answer = await _top(gateway, board.id, "HOME")
        return "errors" not in answer and _scores(answer) == oracle.totals()

    await Region.wait_until(home_answers, HEAL_WITHIN_S, "us's HOME read answering the oracle's totals")
    async with _subscribed(gateway, board.id, USERS[0]) as ws:  # HOME updates flow again, from eu
        await Region.wait_until(lambda: _subscribers(gateway, 1), 30, "the HOME subscription joined")
        update, totals, resyncs = await _update_after_awards(ws, oracle, eu, board.id, USERS[0])
    print(f"HOME subscription after the heal: Resync reasons before its first update: {resyncs}")
    assert update["__typename"] == "ScoreUpdated" and update["asOf"] == {"region": "eu"}, (update, resyncs)
    assert update["score"] in totals, (update, totals)
    await Region.wait_until(lambda: _sources_back(d), HEAL_WITHIN_S, "every replicator reaching its source")
    await Region.wait_until(
        lambda: audited(cassandra_session, board.id, oracle), HEAL_WITHIN_S, "one audit row per award"
    )
    # us applied every award and left the history to eu (its sink may still be reading: wait for it).
    await Region.wait_until(
        lambda: _left_to_home(us.health_url("audit"), len(oracle.amounts)),
        HEAL_WITHIN_S,
        "us leaving every award to eu",
    )


async def _update_after_awards(
    ws: ClientConnection, oracle: Oracle, region: Region, board: str, user: str
) -> tuple[dict[str, Any], list[int], list[str]]:
    """Awards to ``user`` until the subscription tells of one (a joining subscriber reads the board
    first, and a hint older than that read is not repeated): the update, the user's totals, and the
    reasons of any ``Resync`` before it (a subscriber is told to refetch when hints may be missing)."""
    totals, resyncs = [], []
    for n in range(10):
        await oracle.send(region, board, user, f"after-the-heal-{n}", 3)
        totals.append(oracle.totals()[user])
        with contextlib.suppress(TimeoutError):
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), 5))
                update = message["payload"]["data"]["leaderboardUpdates"]
                if update["__typename"] != "Resync":
                    return update, totals, resyncs
                resyncs.append(update["reason"])
    raise AssertionError(f"no HOME update after 10 awards to {user} (resyncs: {resyncs})")


async def _subscribers(gateway: GatewayProcess, count: int) -> bool:
    return await gateway.subscriptions() == count


async def _flow_until(d: Deployment, oracle: Oracle, board: str, done: asyncio.Event) -> None:
    """Keep awards flowing into both regions until ``done``."""
    while not done.is_set():
        await d.flow(oracle, board, 2, USERS)


@pytest.mark.timeout(600)
async def test_three_regions_converge_with_awards_retried_in_another_region(
    deploy: Deploy, cassandra_session: Session
) -> None:
    """eu, us and ap each accept awards, every fifth one again in the next region: every region's
    projection equals the oracle and the home region (us) alone writes the audit, once per award."""
    d = await deploy(["eu", "us", "ap"])
    board = Board("three-regions-board", "Three regions", "us", SortOrder.DESC, tie_policy=TiePolicy.USER_ID)
    await d.regions["us"].create_board(board)
    oracle = Oracle()

    await d.flow(oracle, board.id, 45, USERS)
    assert oracle.acks > len(oracle.amounts)
    assert {region for region, _ in oracle.acked} == {"eu", "us", "ap"}
    await Region.wait_until(lambda: d.converged(board.id, oracle), HEAL_WITHIN_S, "three regions converged")
    await Region.wait_until(
        lambda: audited(cassandra_session, board.id, oracle), HEAL_WITHIN_S, "one audit row per award"
    )
    for name in ("eu", "ap"):  # neither writes audit rows of a board homed in us
        url = d.regions[name].health_url("audit")
        await Region.wait_until(
            lambda url=url: _left_to_home(url, len(oracle.amounts)),
            HEAL_WITHIN_S,
            f"{name} leaving every award to us",
        )


async def test_awards_deleted_before_they_were_replicated_show_as_a_gap_in_as_of(
    deploy: Deploy, replicators: Replicators
) -> None:
    """us deletes awards (retention) before eu's replicator copied them: eu's asOf says ``gap`` for
    us, never passes them silently."""
    d = await deploy(["eu", "us"], services=(), replicate=False)
    eu, us = d.regions["eu"], d.regions["us"]
    await eu.start("processor", "projector")
    sent = await send_awards(us.settings, 20, partition=0)
    await delete_before(us.settings, 0, 12)
    await replicators(eu.settings, "us")

    async def passed_with_a_gap() -> bool:
        as_of = await d.readers["eu"].as_of()
        return as_of.positions.get(("us", 0), -1) >= sent[-1].offset and status(as_of, "us").gap

    await Region.wait_until(passed_with_a_gap, within=60, what="us's partition 0 passed, with a gap")
    assert not status(await d.readers["eu"].as_of(), "eu").gap


async def test_the_convergence_check_fails_when_repeats_are_counted_again(deploy: Deploy) -> None:
    """Negative control: with the processors' dedupe switched off (the test-only setting
    ``processor.fault_forget_event_ids``), the same award sent to both regions is counted twice, and
    the check used above names it."""
    d = await deploy(
        ["eu", "us"],
        services=("processor", "projector", "intake"),
        env={"LB_PROCESSOR__FAULT_FORGET_EVENT_IDS": "true"},
    )
    eu, us = d.regions["eu"], d.regions["us"]
    board = Board("negative-board", "Negative control", "eu")
    await eu.create_board(board)
    oracle = Oracle()
    for n in range(6):
        for region in (eu, us):  # the same award, acknowledged by both regions
            await oracle.send(region, board.id, "ann", f"m{n}", 1)

    async def counted_twice() -> bool:
        return (await eu.total_of(board.id, "ann") or 0) > oracle.totals()["ann"]

    await Region.wait_until(counted_twice, within=HEAL_WITHIN_S, what="a total above the oracle")
    [problem] = [p for p in await problems(eu, board.id, oracle) if "ann" in p]
    assert problem.startswith("eu: ann has ") and problem.endswith(f"the oracle {oracle.totals()['ann']}")
    assert not await d.converged(board.id, oracle)
