"""End to end on one region: an approximate (trending) board created through GraphQL.

The region's real processes and ``python -m gateway``: awards through the intake, ``top`` through
the gateway answers estimates (``estimated``, ``errorBound`` = epsilon x the counted total) that are
never below the true counts and within the bound, with the verified exact count of each; exact
reads are refused naming the board; and a processor store restored from the real changelog holds
exactly the counters of the awards.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

import httpx

from regions.core.sketch import Shape, Sketch, error_bound
from regions.processor.restore import restore
from regions.stores.kafka.clients import cluster_id
from regions.stores.task_state import MemoryStore, StoreIdentity
from tests.e2e.gateway.conftest import GatewayProcess, wait_for
from tests.harness import Region

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
