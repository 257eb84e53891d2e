"""The TypeScript intake client (``clients/typescript``, built by ``ops/test``) against a real
intake: signed awards, refusals named by field, failover from a gone intake and a silent one, and
the entry an award reached with ``waitAppliedMs`` (``?wait=applied``)."""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from regions.core.boards import Board
from tests.conftest import RegionFactory
from tests.harness import Region, free_port, points
from tests.proxy import TcpProxy

HERE = Path(__file__).resolve().parent
BUILT = HERE.parents[2] / "clients" / "typescript" / "dist" / "index.js"
FAST = {"attempts": 6, "failoverAfter": 2, "backoffMs": 50, "maxBackoffMs": 200}


@pytest.fixture
async def intake(region_factory: RegionFactory) -> Region:
    return await region_factory(services=("intake",))


def _award(board: str, user: str = "ann", **fields: Any) -> dict[str, Any]:
    award = {"leaderboardId": board, "userId": user, "matchId": uuid.uuid4().hex, "awardType": "kill",
             "delta": 5, "occurredAt": datetime.now(UTC).isoformat()}  # fmt: skip
    return {**award, **fields}


async def _run(
    endpoints: list[str],
    sends: list[dict[str, Any]],
    secret: str = "dev-secret",
    waits: list[int | None] | None = None,
) -> list[dict[str, Any]]:
    """Each award sent by the client (with ``waitAppliedMs`` where ``waits`` gives one), its outcome."""
    node = shutil.which("node")
    if node is None or not BUILT.is_file():
        raise RuntimeError(f"node and the built client ({BUILT}) are needed: ops/test builds it")
    steps = [{"award": award} | ({} if wait is None else {"waitAppliedMs": wait})
             for award, wait in zip(sends, waits or [None] * len(sends), strict=True)]  # fmt: skip
    plan = {"endpoints": endpoints, "keyId": "dev", "secret": secret, "timeoutMs": 500, "policy": FAST,
            "sends": steps}  # fmt: skip
    process = await asyncio.create_subprocess_exec(
        node, str(HERE / "typescript_client.mjs"), json.dumps(plan),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()[-2000:]
    return [json.loads(line) for line in out.decode().splitlines()]


async def _board(region: Region) -> str:
    board = Board(f"b-{uuid.uuid4().hex[:8]}", "Client board", region.settings.region)
    await region.create_board(board)
    return board.id


async def test_signed_awards_are_accepted_and_refusals_name_each_field(intake: Region) -> None:
    board = await _board(intake)
    sent = await _run([intake.intake_url], [_award(board), _award(board, " "), _award("no-such-board")])
    forged = await _run([intake.intake_url], [_award(board)], secret="wrong")

    assert sent[0]["ok"]["region"] == intake.settings.region and len(sent[0]["ok"]["eventId"]) == 32
    assert sent[1] == {"error": "AwardRefused", "status": 400, "code": "invalid_field",
                       "fields": [{"field": "userId", "rule": sent[1]["fields"][0]["rule"]}]}  # fmt: skip
    assert (sent[2]["status"], sent[2]["code"]) == (404, "unknown_board")
    assert forged[0]["status"] == 403 and forged[0]["code"].startswith("auth_")


async def test_a_gone_intake_and_a_silent_one_fail_over_to_the_next(intake: Region) -> None:
    board = await _board(intake)
    host, port = intake.intake_url.removeprefix("http://").split(":")
    silent = TcpProxy(host, int(port))
    await silent.start()
    silent.blackhole()
    award = _award(board)
    try:
        gone = await _run([f"http://127.0.0.1:{free_port()}", intake.intake_url], [award, _award(board, "bob")])
        quiet = await _run([f"http://127.0.0.1:{silent.port}", intake.intake_url], [award])
        nowhere = await _run([f"http://127.0.0.1:{free_port()}"], [award])
    finally:
        await silent.close()

    assert [r["endpoint"] for r in gone] == [intake.intake_url] * 2
    assert quiet[0]["endpoint"] == intake.intake_url
    assert gone[0]["ok"]["eventId"] == quiet[0]["ok"]["eventId"]  # the same award: the same event id
    assert nowhere == [{"error": "IntakeUnavailable", "attempts": FAST["attempts"]}]


async def test_the_rank_an_award_reached_comes_back_with_wait_applied(region_factory: RegionFactory) -> None:
    region = await region_factory(services=("intake", "processor", "projector"))
    board = await _board(region)
    # Warm up: the first award waits for the processor's and projector's first rounds, which can take
    # longer than the longest wait on a slow machine (then applied is null, as the contract says).
    assert (await region.client.send(points(board, "warm", "zed", 1))).status_code == 202
    await region.wait_for_total(board, "zed", 1)
    sends = [_award(board, "ann", delta=5), _award(board, "bob", delta=9), _award(board, "cy", delta=2)]
    first, second, plain = await _run([region.intake_url], sends, waits=[2000, 2000, None])

    assert first["ok"]["applied"] == {"score": 5, "rank": 1, "sharedRank": 1, "changed": True}  # zed has 1
    assert second["ok"]["applied"] == {"score": 9, "rank": 1, "sharedRank": 1, "changed": True}
    assert "applied" not in plain["ok"] and plain["ok"]["region"] == region.settings.region
