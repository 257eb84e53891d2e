"""A closed board corrected end to end: the gateway's publishCorrection, the real lifecycle worker,
processor and projector, the archive in Cassandra, and a subscriber told of the close and the
correction. Version 2 must be version 1 with exactly the adjustments, ranked again."""

from __future__ import annotations

import asyncio
import random
import uuid
from pathlib import Path
from typing import Any

from cassandra.cluster import Session
from gql import Client, GraphQLRequest
from gql.transport.websockets import WebsocketsTransport
from redis.asyncio import Redis

from regions.core.boards import Board, TiePolicy
from regions.core.ordering import rank_key
from regions.core.results import ResultEntry
from regions.runtime.settings import Settings
from regions.stores.cassandra.corrections import CassandraCorrections
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from regions.stores.cassandra.results import CassandraResults
from tests.conftest import RegionFactory
from tests.harness import Region
from tests.integration.gateway.conftest import Gateway, serve_gateway
from tests.integration.regions.test_cli import lb
from tests.integration.regions.test_close import Sent, _archived, _closed, _processed, _send_batch, _settings

ADMIN = {"Authorization": "Bearer dev-admin-token"}
UPDATES = """subscription($board: ID!) { leaderboardUpdates(leaderboardId: $board) { __typename
  ... on BoardStatusChanged { leaderboardId status resultVersion sequence }
  ... on TopKChanged { sequence } ... on Resync { reason sequence } } }"""
CLOSE = """mutation($id: ID!) { closeLeaderboard(id: $id, reason: "season") { status } }"""
CORRECT = """mutation($input: PublishCorrectionInput!) {
  publishCorrection(input: $input) { correctionId resultVersion status } }"""
READ = """query($id: ID!, $user: ID!, $v1: Int, $v2: Int) { leaderboard(id: $id) { status
  top(k: 3) { entries { userId score } asOf { positions { region partition offset } } }
  player(userId: $user) { rank score }
  first: result(version: $v1) { version playerCount entries(first: 5, after: 0) { rank userId score } }
  second: result(version: $v2) { version playerCount entries(first: 5, after: 3) { rank userId score } } } }"""


def corrected(board: Board, v1: list[ResultEntry], scores: dict[str, int]) -> list[tuple[str, int, int, str]]:
    """The oracle of a correction: version 1 with each adjusted player's score (one version more),
    ranked again by the board's order, its tie order kept."""
    entries = [
        (e.user_id, scores[e.user_id], e.version + 1, e.reached) if e.user_id in scores else
        (e.user_id, e.score, e.version, e.reached) for e in v1
    ]  # fmt: skip
    return sorted(entries, key=lambda e: rank_key(board.sort_order, board.tie_policy, e[0], e[1], e[3]))


def rows(entries: list[ResultEntry]) -> list[tuple[str, int, int, str]]:
    return [(e.user_id, e.score, e.version, e.reached) for e in entries]


async def follow(gw: Gateway, board_id: str, sink: list[dict[str, Any]]) -> None:
    async with Client(transport=WebsocketsTransport(url=gw.ws_url)) as session:
        async for result in session.subscribe(GraphQLRequest(UPDATES, variable_values={"board": board_id})):
            sink.append(result["leaderboardUpdates"])


def statuses(updates: list[dict[str, Any]]) -> list[tuple[str, int | None]]:
    return [(u["status"], u["resultVersion"]) for u in updates if u["__typename"] == "BoardStatusChanged"]


async def published(results: CassandraResults, board_id: str, version: int) -> bool:
    return await results.get(board_id, version) is not None


async def correction_published(corrections: CassandraCorrections, board_id: str, correction_id: str) -> bool:
    """The correction is recorded as published: its version is archived and the board's."""
    entry = await corrections.get(board_id, correction_id)
    return entry is not None and entry.published


async def _region(region_factory: RegionFactory, topics: Settings) -> Region:
    """A region with every process a close and a correction need, the markers written at once."""
    region = await region_factory(_settings(topics, honour_cutoffs=True, catalog_ttl_s=1.0),
                                  services=("processor", "projector", "intake"))  # fmt: skip
    await region.start("lifecycle")
    return region


async def _played(region: Region, board: Board, awards: int) -> None:
    """``board`` created, with ``awards`` random awards to its players, all processed."""
    await region.create_board(board)
    sent = Sent()
    await _send_batch(region, board, random.Random(awards), sent, awards)
    await region.wait_until(lambda: _processed(region.settings, sent), what="awards processed")


async def test_a_correction_publishes_version_2_serves_it_and_tells_subscribers(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session, redis_client: Redis
) -> None:
    region = await _region(region_factory, topics)
    lifecycle, results = CassandraLifecycle(cassandra_session), CassandraResults(cassandra_session)
    corrections = CassandraCorrections(cassandra_session)
    board = Board(f"fix-{uuid.uuid4().hex[:8]}", "corrected", region.settings.region,
                  tie_policy=TiePolicy.FIRST_REACHED)  # fmt: skip
    await _played(region, board, 80)

    async with serve_gateway(region.settings, redis_client, cassandra_session) as gw:
        updates: list[dict[str, Any]] = []
        subscriber = asyncio.create_task(follow(gw, board.id, updates))
        await region.wait_until(lambda: _members(gw, board.id), what="subscribed")
        closing = await gw.query(CLOSE, {"id": board.id}, headers=ADMIN)
        assert closing["data"] == {"closeLeaderboard": {"status": "CLOSING"}}
        await region.wait_until(lambda: _closed(lifecycle, board.id), within=60, what="CLOSED")
        v1 = await _archived(results, board.id)
        top, bottom, middle = v1[0], v1[-1], v1[len(v1) // 2]
        scores = {top.user_id: bottom.score - 1, bottom.user_id: top.score + 100, middle.user_id: v1[1].score}
        adjustments = [{"userId": u, "score": s} for u, s in scores.items()]
        variables = {"input": {"leaderboardId": board.id, "correctionId": "fix-1", "reason": "cheater",
                               "adjustments": adjustments}}  # fmt: skip

        recorded = await gw.query(CORRECT, variables, headers=ADMIN)
        await region.wait_until(lambda: published(results, board.id, 2), within=60, what="version 2 archived")
        # The correction is recorded PUBLISHED once its archive is written; the retry answers that.
        await region.wait_until(lambda: correction_published(corrections, board.id, "fix-1"),
                                what="the correction recorded as published")  # fmt: skip
        retried = await gw.query(CORRECT, variables, headers=ADMIN)
        await region.wait_until(lambda: _told(updates, 3), what="three status changes told")
        read = await gw.query(READ, {"id": board.id, "user": bottom.user_id, "v1": 1, "v2": None})
        subscriber.cancel()

    assert recorded["data"]["publishCorrection"] == {
        "correctionId": "fix-1",
        "resultVersion": 2,
        "status": "PENDING",
    }
    assert retried["data"]["publishCorrection"] == {
        "correctionId": "fix-1",
        "resultVersion": 2,
        "status": "PUBLISHED",
    }
    v2 = await _archived(results, board.id, 2)
    assert rows(v2) == corrected(board, v1, scores) and rows(v2) != rows(v1)
    assert rows(await _archived(results, board.id)) == rows(v1)  # version 1 is unchanged
    header = await results.get(board.id, None)
    assert header is not None and (header.version, header.reason, header.player_count) == (
        2,
        "cheater",
        len(v1),
    )
    record = await lifecycle.record(board.id)
    assert record is not None and record.result_version == 2
    assert [c.correction_id for c in await CassandraCorrections(cassandra_session).of_board(board.id)] == [
        "fix-1"
    ]
    assert await results.get(board.id, 3) is None  # the retry published nothing more
    # What is served: the corrected standings, the cutoffs as asOf, both versions paged.
    leaderboard = read["data"]["leaderboard"]
    assert leaderboard["player"] == {"rank": 1, "score": top.score + 100}
    assert [e["userId"] for e in leaderboard["top"]["entries"]] == [
        r[0] for r in corrected(board, v1, scores)[:3]
    ]
    positions = {
        f"{p['region']}:{p['partition']}": p["offset"] for p in leaderboard["top"]["asOf"]["positions"]
    }
    assert positions == dict(record.cutoffs)
    assert leaderboard["first"]["entries"] == [
        {"rank": i + 1, "userId": e.user_id, "score": e.score} for i, e in enumerate(v1[:5])
    ]
    assert leaderboard["second"]["version"] == 2 and leaderboard["second"]["entries"] == [
        {"rank": i + 4, "userId": e[0], "score": e[1]}
        for i, e in enumerate(corrected(board, v1, scores)[3:8])
    ]
    for user, score in scores.items():
        assert await region.total_of(board.id, user) == score
    # What the subscriber was told: the close, then the correction, in a sequence that only rises.
    assert statuses(updates)[:3] == [("CLOSING", None), ("CLOSED", 1), ("CLOSED", 2)]
    sequences = [u["sequence"] for u in updates]
    assert sequences == sorted(sequences)  # never backwards (a resync may share its round's sequence)


async def _members(gw: Gateway, board_id: str) -> bool:
    return gw.services.hub.members(board_id) == 1


async def _told(updates: list[dict[str, Any]], count: int) -> bool:
    return len(statuses(updates)) >= count


async def test_ops_lb_correct_follows_a_correction_until_its_version_is_published(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session, tmp_path: Path
) -> None:
    region = await _region(region_factory, topics)
    lifecycle, results = CassandraLifecycle(cassandra_session), CassandraResults(cassandra_session)
    board = Board(f"cli-{uuid.uuid4().hex[:8]}", "cli", region.settings.region)
    await _played(region, board, 30)
    assert (await lb(region.settings, "close", board.id, "--reason", "season"))[0] == 0
    await region.wait_until(lambda: _closed(lifecycle, board.id), within=60, what="CLOSED")
    v1 = await _archived(results, board.id)
    more = tmp_path / "adjustments.txt"
    more.write_text(f"# from the match review\n{v1[1].user_id}=7  # second place\n")

    refused = await lb(region.settings, "correct", board.id, "--reason", "review", "nobody=3")
    malformed = await lb(region.settings, "correct", board.id, "--reason", "review", f"{v1[0].user_id}:3")
    done = await lb(region.settings, "correct", board.id, "--reason", "review", f"{v1[0].user_id}=1",
                    "--file", str(more), "--id", "review-1")  # fmt: skip
    again = await lb(region.settings, "correct", board.id, "--reason", "review", f"{v1[0].user_id}=1",
                     "--file", str(more), "--id", "review-1")  # fmt: skip

    assert refused[0] == 1 and "adjustments[0].userId: 'nobody' is not in the result of" in refused[2]
    assert malformed[0] == 1 and "write USER=SCORE" in malformed[2]
    assert done[0] == 0, done
    lines = done[1].splitlines()
    assert lines[0].startswith(f"{board.id}: correction 'review-1' is result version 2 (2 players")
    assert lines[-1].strip().startswith("published: result version 2 is readable")
    assert again[0] == 0 and again[1].splitlines()[-1] == lines[-1]  # the same id: the same version
    assert rows(await _archived(results, board.id, 2)) == corrected(
        board, v1, {v1[0].user_id: 1, v1[1].user_id: 7}
    )
