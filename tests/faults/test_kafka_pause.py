"""Kafka paused (SIGSTOP, as in a long GC pause or a hung broker): no 202 without an acknowledgement."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

from regions.core.boards import Board
from regions.runtime.settings import Settings
from tests.conftest import RegionFactory
from tests.faults.history import History, Op, check_totals

ROOT = Path(__file__).resolve().parents[2]


def kafka_pid() -> int:
    run = Path(os.environ.get("LB_OPS_DATA_DIR", ROOT / ".data")) / "run"
    return int((run / "kafka.pid").read_text())


async def test_paused_kafka_gives_503_and_the_retry_counts_once(
    region_factory: RegionFactory, topics: Settings
) -> None:
    settings = topics.model_copy(
        update={"kafka": topics.kafka.model_copy(update={"delivery_timeout_s": 3.0})}
    )
    region = await region_factory(settings)
    board = Board(f"k-{uuid.uuid4().hex[:8]}", "Kafka pause", settings.region)
    await region.create_board(board)
    history = History()
    assert await history.submit(region.client, board.id, "ann", "before", 5) == "ok"

    pid = kafka_pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        response = await region.client.send(
            {
                "leaderboardId": board.id,
                "matchId": "during",
                "userId": "ann",
                "awardType": "points",
                "delta": 7,
            }
        )
        history.ops.append(Op(board.id, "ann", "during", 7, "info"))  # no answer we may trust
    finally:
        os.kill(pid, signal.SIGCONT)

    assert response.status_code == 503, response.text
    assert response.json()["error"]["code"] == "kafka_unavailable" and response.headers["retry-after"] == "1"
    for service in ("processor", "projector"):
        await region.wait_ready(service)
    assert await history.submit(region.client, board.id, "ann", "during", 7) == "ok"  # the client retries

    async def settled() -> bool:
        return not check_totals(history, {(board.id, "ann"): await region.total_of(board.id, "ann")})

    await region.wait_until(settled, within=60, what="ann's total of 12")
    assert await region.total_of(board.id, "ann") == 12
