"""End to end on one region: an approximate (trending) board created through GraphQL.

The region's real processes and ``python -m gateway``: awards through the intake, ``top`` through
the gateway answers estimates (``estimated``, ``errorBound`` = epsilon x the counted total) that are
never below the true counts and within the bound, with the verified exact count of each; exact
reads are refused naming the board; and a processor store restored from the real changelog holds
exactly the counters of the awards.

Closed through the real lifecycle worker, the board's result is its final chart: the top(k) it
showed, estimates with their error bound, each item's verified count and no metadata, alike in
``result``, ``ops/lb results`` and the player export; a correction is refused naming the field, and
hiding an item publishes the chart without it.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

from regions.core.sketch import Shape, Sketch, error_bound
from regions.processor.restore import restore
from regions.runtime.settings import Settings
from regions.stores.kafka.clients import cluster_id
from regions.stores.task_state import MemoryStore, StoreIdentity
from tests.conftest import RegionFactory
from tests.e2e.gateway.conftest import GatewayProcess, start_gateway, wait_for
from tests.harness import Region
from tests.integration.regions.test_cli import lb
from tests.integration.regions.test_close import _settings

ADMIN = {"Authorization": "Bearer dev-admin-token"}
CREATE = """mutation($id: ID!, $a: ApproximateInput, $g: Aggregation) {
  createLeaderboard(input: {id: $id, name: "Trending", aggregation: $g, approximate: $a}) {
    id approximate { k epsilon delta }
  }
}"""
TOP = """query($id: ID!, $k: Int) {
  leaderboard(id: $id) { top(k: $k) { estimated errorBound entries { userId score verified exactScore } } }
}"""
PLAYER = """query($id: ID!) { leaderboard(id: $id) { player(userId: "song0") { rank } } }"""
EPSILON, K = 0.01, 5


async def _gql(
    gw: GatewayProcess, query: str, headers: dict[str, str] | None = None, **variables: Any
) -> Any:
    async with httpx.AsyncClient() as http:
        return (
            await http.post(gw.url, json={"query": query, "variables": variables}, headers=headers)
        ).json()


def _plays(board: str) -> list[dict[str, Any]]:
    """song<i> is played 20 - i times, once more as a repeat of its first play (counted once)."""
    plays = [{"matchId": f"m{n}", "leaderboardId": board, "userId": f"song{i}", "awardType": "play", "delta": 1}
             for i in range(20) for n in range(20 - i)]  # fmt: skip
    return plays + [p for p in plays if p["matchId"] == "m0"]


async def test_top_answers_estimates_within_the_bound_and_exact_reads_are_refused(
    region: Region, gateway_process: GatewayProcess
) -> None:
    gw, board = gateway_process, f"trend-{uuid.uuid4().hex[:10]}"
    refused = await _gql(gw, CREATE, ADMIN, id=board, a={"k": 0, "epsilon": EPSILON, "delta": 0.01})
    assert refused["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert "input.approximate.k" in refused["errors"][0]["message"]
    refused = await _gql(gw, CREATE, ADMIN, id=board, a={"k": K, "epsilon": EPSILON, "delta": 0.01}, g="MAX")
    assert "approximate: only with aggregation SUM" in refused["errors"][0]["message"]
    created = await _gql(gw, CREATE, ADMIN, id=board, a={"k": K, "epsilon": EPSILON, "delta": 0.01})
    assert created["data"]["createLeaderboard"]["approximate"] == {"k": K, "epsilon": EPSILON, "delta": 0.01}

    plays = _plays(board)
    accepted: list[dict[str, Any]] = []
    for start in range(0, len(plays), 100):
        sent = await region.client.send({"awards": plays[start : start + 100]})
        assert sent.status_code == 202, sent.text
        accepted += sent.json()["accepted"]
    truth = {f"song{i}": 20 - i for i in range(20)}
    total = sum(truth.values())
    found: dict[str, Any] = {}

    async def counted_all() -> bool:
        found.update((await _gql(gw, TOP, id=board, k=K))["data"]["leaderboard"]["top"])
        return found["errorBound"] == error_bound(EPSILON, total)

    await wait_for(counted_all, what="a top whose error bound covers every award")
    assert found["estimated"] is True and len(found["entries"]) == K
    for entry in found["entries"]:
        assert truth[entry["userId"]] <= entry["score"] <= truth[entry["userId"]] + found["errorBound"]
        # each partition's list had room for the best songs when their first plays came: verified
        assert (entry["verified"], entry["exactScore"]) == (True, truth[entry["userId"]])
    assert found["entries"][0] == {"userId": "song0", "score": 20, "verified": True, "exactScore": 20}

    over = await _gql(gw, TOP, id=board, k=K + 1)
    assert over["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    exact = await _gql(gw, PLAYER, id=board)
    assert exact["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert f"leaderboardId {board!r}: the board is approximate" in exact["errors"][0]["message"]

    await _restored_sketches_hold_the_awards(region, board, plays, accepted)


async def _restored_sketches_hold_the_awards(
    region: Region, board: str, plays: list[dict[str, Any]], accepted: list[dict[str, Any]]
) -> None:
    """A new store per partition, restored from the changelog, holds the counters the pure core
    folds from the awards the intake put in that partition."""
    kafka, shape = region.settings.kafka, Shape.of(EPSILON, 0.01)
    expected: dict[int, Sketch] = defaultdict(lambda: Sketch(shape, lambda _: None))
    seen: set[str] = set()
    for play, where in zip(plays, accepted, strict=True):
        if where["eventId"] not in seen:
            seen.add(where["eventId"])
            expected[where["partition"]].add(play["userId"], play["delta"])
    cluster = await cluster_id(kafka)
    for partition, sketch in expected.items():
        store = MemoryStore()
        identity = StoreIdentity(cluster, (kafka.topic("totals"), kafka.topic("dedupe")), partition)
        await restore(kafka, store, identity, retention_ms=86_400_000)
        blocks = sketch.changed_blocks()
        assert {key: store.sketch_block((board, *key)) for key in blocks} == blocks
        assert store.candidates(board).total == sum(sum(b) for (row, _), b in blocks.items() if row == 0)


CHART = """query($id: ID!, $k: Int, $v: Int) { leaderboard(id: $id) { status
  top(k: $k) { estimated errorBound entries { rank sharedRank userId score verified exactScore metadata } }
  result(version: $v) { version playerCount estimated errorBound
    entries(first: 10) { rank sharedRank userId score verified exactScore metadata } } } }"""
CLOSE = """mutation($id: ID!) { closeLeaderboard(id: $id, reason: "week 49") { status } }"""
CORRECT = """mutation($id: ID!) { publishCorrection(input: {leaderboardId: $id, correctionId: "fix-1",
  reason: "review", adjustments: [{userId: "song0", score: 1}]}) { resultVersion } }"""
HIDE = """mutation($id: ID!) { hidePlayer(leaderboardId: $id, userId: "song0", reason: "bot plays") { sequence } }"""
EXPORT = """query { playerExport(userId: "song0") }"""


async def _closing_region(region_factory: RegionFactory, topics: Settings) -> Region:
    """A region with its lifecycle worker, the markers written at once, results in chunks of 2."""
    settings = _settings(topics, honour_cutoffs=True, catalog_ttl_s=1.0)
    settings = settings.model_copy(update={"lifecycle": settings.lifecycle.model_copy(update={"chunk_size": 2})})
    region = await region_factory(settings, services=("processor", "projector", "intake"))
    await region.start("lifecycle")
    return region


async def test_a_closed_approximate_board_archives_its_final_chart_as_estimates(
    region_factory: RegionFactory, topics: Settings, tmp_path: Path
) -> None:
    region = await _closing_region(region_factory, topics)
    board = f"trend-{uuid.uuid4().hex[:10]}"
    truth = {f"song{i}": 20 - i for i in range(20)}
    bound = error_bound(EPSILON, sum(truth.values()))
    read: dict[str, Any] = {}
    async with start_gateway(region.env, tmp_path / "gateway.log") as gw:

        async def chart(version: int | None = None) -> bool:
            """Read the board's top and result ``version``; whether that version is archived."""
            read.clear()
            read.update((await _gql(gw, CHART, id=board, k=K, v=version))["data"]["leaderboard"])
            return version is None or read["result"] is not None

        async def counted_all() -> bool:
            await chart()
            return bool(read["top"]["errorBound"] == bound)

        await _gql(gw, CREATE, ADMIN, id=board, a={"k": K, "epsilon": EPSILON, "delta": 0.01})
        plays = _plays(board)
        for start in range(0, len(plays), 100):
            sent = await region.client.send({"awards": plays[start : start + 100]})
            assert sent.status_code == 202, sent.text
        await wait_for(counted_all, what="a top whose error bound covers every award")
        live = read["top"]
        assert (await _gql(gw, CLOSE, ADMIN, id=board))["data"] == {"closeLeaderboard": {"status": "CLOSING"}}
        await wait_for(lambda: chart(1), within=60, what="the close's result archived")
        first = dict(read)
        refused = await _gql(gw, CORRECT, ADMIN, id=board)
        cli_refused = await lb(region.settings, "correct", board, "--reason", "review", "song0=1")
        cli_result = await lb(region.settings, "results", board)
        exported = (await _gql(gw, EXPORT, ADMIN))["data"]["playerExport"]
        assert (await _gql(gw, HIDE, ADMIN, id=board))["data"]["hidePlayer"]["sequence"] == 1
        await wait_for(lambda: chart(2), within=60, what="the chart without the hidden item archived")
        second = dict(read)

    # Version 1 is the chart top(k) showed at the close, the best k of the 20 candidates: estimates
    # with their error bound, every verified count, no metadata.
    assert len(live["entries"]) == K and live["estimated"] is True
    for entry in live["entries"]:
        assert (entry["verified"], entry["exactScore"], entry["metadata"]) == (True, truth[entry["userId"]], None)
    assert first["top"] == live  # the closed board's standings are frozen
    assert first["result"] == {"version": 1, "playerCount": K, "estimated": True, "errorBound": bound,
                               "entries": live["entries"]}  # fmt: skip
    # The CLI and the export show the same; a correction is refused naming the field.
    assert refused["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert refused["errors"][0]["message"].startswith(
        f"input.leaderboardId: leaderboard {board!r} is approximate (trending)"
    )
    assert cli_refused[0] == 1 and f"leaderboardId: leaderboard {board!r} is approximate" in cli_refused[2]
    lines = cli_result[1].splitlines()
    assert cli_result[0] == 0, cli_result
    assert lines[0].endswith(f"{K} players in 3 chunks of 2; scores are estimates, error bound {bound}")
    top = lines[1].split()
    assert (top[:3], top[4:]) == (["1", "song0", "20"], ["verified", "20"]) and len(lines) == K + 1
    assert exported["archivedResults"] == [
        {"leaderboardId": board, "version": 1, "rank": 1, "score": 20, "metadata": None, "errorBound": bound,
         "estimated": True, "verified": True, "exactScore": 20}
    ]  # fmt: skip
    assert [s for s in exported["scores"] if s["leaderboardId"] == board] == [
        {"leaderboardId": board, "total": 20, "rank": None, "sharedRank": None, "metadata": None,
         "estimated": True, "verified": True, "exactScore": 20}
    ]  # fmt: skip
    # Hiding an item publishes the chart without it: the next candidate moves up, the bound unchanged.
    moved = [e["userId"] for e in second["result"]["entries"]]
    assert moved[: K - 1] == [e["userId"] for e in live["entries"][1:]] and "song0" not in moved
    assert second["result"] == {"version": 2, "playerCount": K, "estimated": True, "errorBound": bound,
                                "entries": second["top"]["entries"]}  # fmt: skip
