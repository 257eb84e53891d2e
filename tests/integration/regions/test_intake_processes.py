"""Several intake processes on one port (SO_REUSEPORT): each one accepts awards, and a stop ends all."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx

from regions.core.boards import Board
from regions.intake.client import signed_request
from regions.runtime.settings import Settings
from tests.conftest import RegionFactory


def children(pid: int) -> set[int]:
    return {int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def running(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


async def test_every_process_of_a_multi_process_intake_accepts_awards(
    region_factory: RegionFactory, topics: Settings
) -> None:
    settings = topics.model_copy(update={"intake": topics.intake.model_copy(update={"workers": 3})})
    region = await region_factory(settings, services=("intake",))
    process = region.processes["intake"]
    parent = process.pid
    workers = children(parent)
    board = Board(f"b-{uuid.uuid4().hex[:8]}", "Test board", region.settings.region)
    await region.create_board(board)

    accepted_by: dict[int, int] = {}
    for _ in range(300):  # a new connection each time: the kernel picks a process per connection
        if set(accepted_by) == workers:
            break
        async with httpx.AsyncClient(base_url=region.intake_url, timeout=10) as http:
            pid = (await http.get("/healthz")).json()["pid"]  # the same connection serves the award
            award = {"leaderboardId": board.id, "matchId": uuid.uuid4().hex, "userId": "ann",
                     "awardType": "kill", "delta": 1}  # fmt: skip
            body, headers = signed_request("dev", "dev-secret", award)
            response = await http.post("/internal/awards", content=body, headers=headers)
            assert response.status_code == 202, response.text
            accepted_by[pid] = accepted_by.get(pid, 0) + 1

    assert len(workers) == 3
    assert set(accepted_by) == workers
    await region.stop("intake")
    assert process.returncode == 0
    assert not any(running(pid) for pid in workers)
    assert "Traceback" not in region.tail("intake", 10_000)
