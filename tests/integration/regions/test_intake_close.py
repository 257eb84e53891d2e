"""A board's close seen by the real intake (a process of its own) reading the real catalog: once the
close has begun, the intake refuses the board's awards (409 ``board_closed``) within its catalog TTL,
also the very first award after the intake sat idle with the board cached as OPEN."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from datetime import UTC, datetime

from cassandra.cluster import Session

from regions.actions.close import begin_close
from regions.core.boards import Board
from regions.runtime.settings import Settings
from regions.stores.cassandra.lifecycle import CassandraLifecycle
from tests.conftest import RegionFactory
from tests.harness import Region

TTL_S = 1.0


def _award(board_id: str) -> dict[str, object]:
    return {"leaderboardId": board_id, "matchId": uuid.uuid4().hex, "userId": "ann", "awardType": "kill",
            "delta": 1}  # fmt: skip


async def _intake(region_factory: RegionFactory, topics: Settings) -> Region:
    intake = topics.intake.model_copy(update={"catalog_ttl_s": TTL_S})
    return await region_factory(topics.model_copy(update={"intake": intake}), services=("intake",))


async def _open_board(region: Region) -> Board:
    board = Board(f"ic-{uuid.uuid4().hex[:8]}", "Closing", region.settings.region)
    await region.create_board(board)
    first = await region.client.send(_award(board.id))  # the intake now holds the board as OPEN
    assert first.status_code == 202, first.text
    return board


async def _close(session: Session, region: Region, board_id: str) -> float:
    """Begin the close as ``ops/lb close`` does; the monotonic time it began."""
    began = time.monotonic()
    record = await begin_close(CassandraLifecycle(session), board_id, "test", region=region.settings.region,
                               now=datetime.now(UTC))  # fmt: skip
    assert record.board.status == "CLOSING"
    return began


async def test_the_first_award_after_a_close_is_refused_though_the_board_was_cached_open(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session
) -> None:
    region = await _intake(region_factory, topics)
    board = await _open_board(region)
    await asyncio.sleep(TTL_S * 1.5)  # the cached OPEN answer is older than the TTL now

    await _close(cassandra_session, region, board.id)
    answers = [await region.client.send(_award(board.id)) for _ in range(3)]

    assert [a.status_code for a in answers] == [409] * 3, [a.text for a in answers]
    assert {a.json()["error"]["code"] for a in answers} == {"board_closed"}


async def _refused_after(region: Region, session: Session, board: Board, close_in: float) -> float:
    """Awards one after another, the close begun ``close_in`` s in; seconds from its start to the first 409."""
    sending = time.monotonic()
    began = None
    while True:
        if began is None and time.monotonic() - sending >= close_in:
            began = await _close(session, region, board.id)
        status = (await region.client.send(_award(board.id))).status_code
        if began is not None and status == 409:
            return time.monotonic() - began
        assert status == 202, f"{status} before the first 409"
        assert began is None or time.monotonic() - began < 10 * TTL_S, (
            f"still 202 {10 * TTL_S} s after the close"
        )


async def test_a_busy_intake_refuses_a_closing_board_within_the_catalog_ttl(
    region_factory: RegionFactory, topics: Settings, cassandra_session: Session
) -> None:
    region = await _intake(region_factory, topics)
    rng = random.Random(5)
    delays = []
    for _ in range(4):  # the close at a random point of the cached answer's life
        board = await _open_board(region)
        delays.append(await _refused_after(region, cassandra_session, board, rng.uniform(0, 2 * TTL_S)))

    print("first 409 after the close began:", ", ".join(f"{d * 1000:.0f} ms" for d in delays))
    assert max(delays) < TTL_S + 0.5, delays
